"""The agent tool API in real Chromium: newsroom pages through the proxy, and a small form /
tabs page from a real loopback HTTP server (http.server in a thread)."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

import pytest
from playwright.async_api import async_playwright

from newsbench_dagster.core.agents.targets import DOM_SLICE_MAX_BYTES
from newsbench_dagster.core.agents.tools import BrowserTools, BudgetExceeded

HARBOR = "http://harbor-herald.test/"

# One big block (> 32 KB) around a small form: the slice must stop below it.
FILLER = "".join(f"<p>Filler paragraph {i} " + "lorem ipsum " * 20 + "</p>" for i in range(150))

FORM_PAGE = f"""<!doctype html><html><head><title>Form page</title></head><body>
<h1>Reader settings</h1>
<div id="big">{FILLER}
 <form id="prefs" action="/done" method="get">
  <label for="email">Email address</label><input id="email" name="email" type="email">
  <input name="city" placeholder="Your city">
  <label for="freq">Frequency</label>
  <select id="freq" name="freq">
    <option value="d">Daily</option><option value="w">Weekly</option>
  </select>
  <label><input type="checkbox" name="terms" value="yes"> I accept the terms</label>
  <fieldset><legend>Format</legend>
    <label><input type="radio" name="fmt" value="html"> HTML</label>
    <label><input type="radio" name="fmt" value="text"> Plain text</label>
  </fieldset>
  <button type="submit" id="save">Save settings</button>
 </form>
</div>
<p><a href="/other" target="_blank" id="newtab">Open the other page</a></p>
<button onclick="window.open('/popup')">Pop up</button>
<p id="later"></p>
<section><label for="promo0">Promo code</label><input id="promo0" disabled>
  <button disabled>Apply</button></section>
<section><label for="promo1">Promo code</label><input id="promo1">
  <button id="apply" disabled onclick="this.textContent = 'Applied'">Apply</button></section>
<script>setTimeout(() => document.getElementById('apply').disabled = false, 400)</script>
<label for="pw">Password</label><input id="pw" type="password">
<input id="card" autocomplete="cc-number" placeholder="Card number">
<script>setTimeout(() => document.getElementById('later').textContent = 'Arrived late', 300)
</script>
<div style="height: 3000px"></div><p id="bottom">The bottom</p>
</body></html>"""

PAGES = {
    "/form": FORM_PAGE,
    "/other": "<!doctype html><title>Other</title><h1>The other page</h1>",
    "/popup": "<!doctype html><title>Popup</title><h1>A popup</h1>",
}


class _Handler(BaseHTTPRequestHandler):
    def do_GET(self) -> None:  # noqa: N802 - http.server's name
        parts = urlsplit(self.path)
        if parts.path == "/done":
            q = parse_qs(parts.query)
            body = "<!doctype html><title>Saved</title><h1>Saved</h1>" + "".join(
                f'<p class="got" data-k="{k}">{k}={",".join(v)}</p>' for k, v in q.items()
            )
        elif parts.path in PAGES:
            body = PAGES[parts.path]
        else:
            self.send_error(404)
            return
        data = body.encode()
        self.send_response(200)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture(scope="module")
def site() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


@pytest.fixture(scope="module")
def loop() -> Iterator[asyncio.AbstractEventLoop]:
    loop = asyncio.new_event_loop()
    yield loop
    loop.close()


@pytest.fixture(scope="module")
def browser(loop, browser_options):
    """One Chromium for the module; the loopback test server bypasses the newsroom proxy."""
    kwargs = browser_options.launch_kwargs()
    kwargs["proxy"] = {**kwargs["proxy"], "bypass": "127.0.0.1"}
    pw = loop.run_until_complete(async_playwright().start())
    browser = loop.run_until_complete(pw.chromium.launch(**kwargs))
    yield browser
    loop.run_until_complete(browser.close())
    loop.run_until_complete(pw.stop())


@pytest.fixture
def run(loop, browser, browser_options):
    """run(fn, **tool_kwargs): fn(tools) in a fresh context, closed afterwards."""

    def go(fn, **kwargs):
        async def main():
            context = await browser.new_context(**browser_options.context_kwargs())
            try:
                page = await context.new_page()
                tools = BrowserTools(
                    page, max_steps=kwargs.pop("max_steps", 60), max_tokens=1000, **kwargs
                )
                tools.action_timeout_ms = 1_500  # misses fail fast in tests
                return await fn(tools)
            finally:
                await context.close()

        return loop.run_until_complete(main())

    return go


def test_form_tools_with_semantic_locators_and_selectors(run, site):
    async def fn(tools: BrowserTools):
        assert (await tools.goto(f"{site}/form"))["ok"]
        assert tools.context is tools.page.context and tools.cdp_url is None
        assert await tools.type("reader@example.org", label="Email address") == {"ok": True}
        assert (await tools.type("Bre", placeholder="Your city"))["ok"]
        assert (await tools.type("men", "input[name=city]", clear=False))["ok"]
        chosen = await tools.select("Weekly", label="Frequency")  # by visible label
        assert chosen == {"ok": True, "selected": ["w"]}
        assert (await tools.select("d", "#freq"))["selected"] == ["d"]  # by value
        assert await tools.check(role="checkbox", name="I accept the terms") == {
            "ok": True,
            "checked": True,
        }
        assert (await tools.check(label="Plain text"))["checked"] is True
        assert (await tools.check("input[name=terms]", checked=False))["checked"] is False
        assert (await tools.check(label="I accept the terms"))["checked"] is True
        got = await tools.extract_text(role="heading", name="Reader settings")
        assert got == {"ok": True, "text": "Reader settings"}
        clicked = await tools.click(role="button", name="Save settings")
        assert clicked["ok"] and "/done?" in clicked["url"]
        saved = await tools.extract_text(text="email=")
        assert saved["text"] == "email=reader@example.org"
        assert (await tools.extract_text("[data-k=city]"))["text"] == "city=Bremen"
        assert (await tools.extract_text("[data-k=freq]"))["text"] == "freq=d"
        assert (await tools.extract_text("[data-k=fmt]"))["text"] == "fmt=text"
        assert (await tools.extract_text("[data-k=terms]"))["text"] == "terms=yes"
        back = await tools.back()
        assert back == {"ok": True, "url": f"{site}/form"}
        # Enter in a field submits its form, like a person would.
        await tools.type("again@example.org", label="Email address")
        await tools.check(text="I accept the terms")
        pressed = await tools.press("Enter", label="Email address")
        assert pressed["ok"] and "email=again%40example.org" in pressed["url"]
        return tools

    tools = run(fn)
    steps = tools.trajectory.steps
    assert all(s["status"] == "ok" for s in steps), [s for s in steps if s["status"] != "ok"]
    typed = next(s for s in steps if s["tool"] == "type")
    assert typed["args"] == {"label": "Email address", "value": "reader@example.org", "clear": True}
    click = next(s for s in steps if s["tool"] == "click")
    assert click["args"] == {"role": "button", "name": "Save settings"}
    assert "/done?" in click["url"] and click["latency_ms"] >= 0
    # A slice per targeted action, pointing at its own step.
    sliced = [d for d in tools.dom_slices]
    assert [d["tool"] for d in sliced] == [
        s["tool"] for s in steps if s["tool"] in {"type", "select", "check", "click", "press"}
    ]
    assert all(steps[d["step"]]["tool"] == d["tool"] for d in sliced)


def test_disabled_controls_are_passed_over_and_hydrating_ones_waited_for(run, site):
    async def fn(tools: BrowserTools):
        await tools.goto(f"{site}/form")
        typed = await tools.type("SAVE10", label="Promo code")  # the first one is disabled
        clicked = await tools.click(role="button", name="Apply")  # enabled after 400 ms
        value = await tools.page.locator("#promo1").input_value()
        return typed, clicked, value, await tools.extract_text("#apply")

    typed, clicked, value, applied = run(fn)
    assert typed == {"ok": True} and clicked["ok"] and value == "SAVE10"
    assert applied["text"] == "Applied"


def test_secrets_typed_are_not_recorded(run, site):
    async def fn(tools: BrowserTools):
        await tools.goto(f"{site}/form")
        await tools.type("hunter2", label="Password")
        await tools.type("4111 1111 1111 1111", placeholder="Card number")
        await tools.type("Bremen", placeholder="Your city")
        page = tools.page
        return tools, [await page.locator(s).input_value() for s in ("#pw", "#card")]

    tools, values = run(fn)
    assert values == ["hunter2", "4111 1111 1111 1111"]  # typed all the same
    typed = [s["args"]["value"] for s in tools.trajectory.steps if s["tool"] == "type"]
    assert typed == ["<secret: 7 characters>", "<secret: 19 characters>", "Bremen"]
    assert "hunter2" not in repr(tools.trajectory) + repr(tools.dom_slices)


def test_dom_slice_holds_the_clicked_node_and_fits_32kb(run, site):
    async def fn(tools: BrowserTools):
        await tools.goto(f"{site}/form")
        assert len(await tools.page.content()) > DOM_SLICE_MAX_BYTES  # the page is bigger
        await tools.click("#save")
        return tools

    tools = run(fn)
    (dom,) = tools.dom_slices
    assert dom["tool"] == "click" and dom["url"].endswith("/form")
    assert tools.trajectory.steps[dom["step"]]["tool"] == "click"
    html = dom["html"]
    assert len(html.encode()) <= DOM_SLICE_MAX_BYTES
    assert 'id="save"' in html
    # Grown outward: the whole form (its ancestor), not the big block around it.
    assert html.startswith('<form id="prefs"') and 'id="big"' not in html


def test_a_missing_element_is_ok_false_and_a_missing_target_raises(run, site):
    async def fn(tools: BrowserTools):
        await tools.goto(f"{site}/form")
        tools.action_timeout_ms = 500
        results = [
            await tools.click(role="button", name="No such button"),
            await tools.type("x", label="No such field"),
            await tools.select("Monthly", label="Frequency"),  # the option is missing
            await tools.check("#nope"),
            await tools.press("Enter", placeholder="Nowhere"),
            await tools.scroll(selector="#nope"),
            await tools.wait(0.3, text="Never shown"),
        ]
        missing = await tools.extract_text("#nope")
        with pytest.raises(ValueError, match="click needs a target"):
            await tools.click()
        with pytest.raises(ValueError, match="type needs a target"):
            await tools.type("x")
        with pytest.raises(ValueError, match="give role too"):
            await tools.check(name="terms")
        with pytest.raises(ValueError, match="direction"):
            await tools.scroll("sideways")
        return tools, results, missing

    tools, results, missing = run(fn)
    for r in results:
        assert r["ok"] is False and r["error"], r
    assert missing["ok"] is False and missing["text"] is None
    statuses = [s["status"] for s in tools.trajectory.steps[1:]]
    assert statuses == ["error"] * len(results) + ["not_found"]
    # Only the select was there to slice (its option was the miss).
    assert [d["tool"] for d in tools.dom_slices] == ["select"]


def test_a_keyword_that_names_no_target_is_a_type_error(run, site):
    async def fn(tools: BrowserTools):
        await tools.goto(f"{site}/form")
        with pytest.raises(TypeError, match="click.. got an unexpected keyword argument 'href'"):
            await tools.click(href="/other")  # type: ignore[call-arg]
        return tools

    tools = run(fn)
    assert [s["tool"] for s in tools.trajectory.steps] == ["goto"]  # no step was taken


def test_scroll_wait_and_keyboard(run, site):
    async def fn(tools: BrowserTools):
        await tools.goto(f"{site}/form")
        down = await tools.scroll("down", 500)
        up = await tools.scroll("up", 200)
        into_view = await tools.scroll(selector="#bottom")
        waited = await tools.wait(3, text="Arrived late")
        slept = await tools.wait(0.2)
        by_selector = await tools.wait(1, selector="#bottom")
        capped = tools.trajectory.steps[-1]
        press = await tools.press("End")
        return down, up, into_view, waited, slept, by_selector, press, capped, tools

    down, up, into_view, waited, slept, by_selector, press, _, tools = run(fn)
    assert down == {"ok": True, "scroll_y": 500} and up == {"ok": True, "scroll_y": 300}
    assert into_view["ok"] and into_view["scroll_y"] > 2000
    assert waited == slept == by_selector == {"ok": True}
    assert press == {"ok": True, "url": press["url"]} and press["url"].endswith("/form")
    assert tools.trajectory.steps[2]["args"] == {"direction": "up", "amount": 200}


def test_wait_is_capped(run, site):
    async def fn(tools: BrowserTools):
        await tools.goto(f"{site}/other")
        return await tools.wait(3600, selector="h1"), tools

    result, tools = run(fn)
    assert result == {"ok": True}
    assert tools.trajectory.steps[-1]["args"]["seconds"] == 10.0


def test_tabs_opened_by_the_page_and_by_the_agent(run, site):
    async def fn(tools: BrowserTools):
        await tools.goto(f"{site}/form")
        first = tools.page
        await tools.click(text="Open the other page")  # target=_blank
        # Tabs are listed in the order they arrive; let the first one land before
        # opening the second, or the two race and the order is the browser's choice.
        for _ in range(20):
            if len((await tools.tabs())["tabs"]) == 2:
                break
            await asyncio.sleep(0.1)
        await tools.click(role="button", name="Pop up")  # window.open
        for _ in range(20):  # the site's tabs arrive asynchronously
            listed = (await tools.tabs())["tabs"]
            if len(listed) == 3 and all(t["title"] for t in listed):
                break
            await asyncio.sleep(0.1)
        assert tools.page is first  # opening a tab does not move the agent
        switched = await tools.switch_tab(1)
        heading = await tools.extract_text("h1")
        opened = await tools.open_tab(f"{site}/other")
        after_open = (await tools.tabs())["tabs"]
        bad = await tools.switch_tab(9)
        closed = await tools.close_tab()  # the active (new) tab
        after_close = (await tools.tabs())["tabs"]
        for _ in range(len(after_close) - 1):
            assert (await tools.close_tab(0))["ok"]
        last = await tools.close_tab()
        survivor = await tools.extract_text("h1")
        return (
            listed,
            switched,
            heading,
            opened,
            after_open,
            bad,
            closed,
            after_close,
            (
                last,
                survivor,
            ),
        )

    listed, switched, heading, opened, after_open, bad, closed, after_close, tail = run(fn)
    assert [t["url"].rsplit("/", 1)[1] for t in listed] == ["form", "other", "popup"]
    assert [t["active"] for t in listed] == [True, False, False]
    assert [t["title"] for t in listed] == ["Form page", "Other", "Popup"]
    assert switched["ok"] and switched["url"].endswith("/other")
    assert heading["text"] == "The other page"
    assert opened == {"ok": True, "index": 3, "url": opened["url"]}
    assert [t["active"] for t in after_open] == [False, False, False, True]
    assert bad["ok"] is False and "no tab 9" in bad["error"]
    assert closed == {"ok": True} and len(after_close) == 3
    assert [t["active"] for t in after_close] == [False, False, True]
    last, survivor = tail
    assert last["ok"] is False and "last open tab" in last["error"]
    assert survivor["ok"]  # one tab is still there to act on


def test_a_tab_that_closes_under_the_agent_leaves_it_a_page(run, site):
    async def fn(tools: BrowserTools):
        await tools.goto(f"{site}/form")
        await tools.click(role="button", name="Pop up")  # window.open: a tab the site owns
        for _ in range(20):
            if len((await tools.tabs())["tabs"]) == 2:
                break
            await asyncio.sleep(0.1)
        assert (await tools.switch_tab(1))["url"].endswith("/popup")
        await tools.page.evaluate("() => window.close()")  # the site closes its own tab
        for _ in range(20):
            if tools.page.url.endswith("/form"):
                break
            await asyncio.sleep(0.1)
        return await tools.extract_text("h1"), await tools.tabs()

    text, tabs = run(fn)
    assert text == {"ok": True, "text": "Reader settings"}
    assert len(tabs["tabs"]) == 1 and tabs["tabs"][0]["active"]


def test_reading_a_newsroom_page(run):
    async def fn(tools: BrowserTools):
        assert (await tools.goto(HARBOR))["ok"]
        heading = await tools.extract_text("h1, h2")
        snapshot = await tools.accessibility_snapshot()
        shot = await tools.screenshot()
        full = await tools.screenshot(full_page=True)
        meta = await tools.get_metadata()
        links = await tools.links()
        record = await tools.read_page()
        return heading, snapshot, shot, full, meta, links, record, tools

    heading, snapshot, shot, full, meta, links, record, tools = run(fn)
    assert snapshot["ok"] and snapshot["truncated"] is False
    assert "- heading" in snapshot["snapshot"] and heading["text"] in snapshot["snapshot"]
    assert shot["png"].startswith(b"\x89PNG\r\n\x1a\n")
    assert (shot["width"], shot["height"]) == (1366, 900)
    assert full["width"] == 1366 and full["height"] > 900
    assert meta["url"] == HARBOR and meta["title"]
    assert links["ok"] and len(links["links"]) > 5
    assert record.get("kind")
    # The PNG is returned, not kept in the trajectory.
    shots = [s for s in tools.trajectory.steps if s["tool"] == "screenshot"]
    assert [s["args"] for s in shots] == [{"full_page": False}, {"full_page": True}]
    assert all("png" not in s for s in shots)


def test_step_and_byte_budgets(run, site):
    async def steps(tools: BrowserTools):
        await tools.goto(f"{site}/other")
        await tools.extract_text("h1")
        with pytest.raises(BudgetExceeded, match="step budget of 2 exhausted at tabs"):
            await tools.tabs()
        assert await tools.answer({"x": 1}) == {"ok": True}  # answering is never refused
        assert await tools.answer({"x": 2}, claims_success=False) == {"ok": True}
        return tools

    tools = run(steps, max_steps=2)
    assert [a.value for a in tools.trajectory.answers] == [{"x": 1}, {"x": 2}]
    assert tools.steps == 2

    used = {"n": 0}

    async def by_bytes(tools: BrowserTools):
        assert (await tools.goto(f"{site}/other"))["ok"]
        used["n"] = 5_000
        assert (await tools.extract_text("h1"))["ok"]  # at the limit: still allowed
        used["n"] = 5_001
        with pytest.raises(BudgetExceeded, match="byte budget of 5000 exhausted at click"):
            await tools.click("h1")
        await tools.answer({"done": True})
        return tools

    tools = run(by_bytes, max_bytes=5_000, bytes_used=lambda: used["n"])
    assert [s["tool"] for s in tools.trajectory.steps] == ["goto", "extract_text", "answer"]
