"""The reference agent: metadata-first, no model. It is the witness other agents are
compared against, so it reads pages the way the oracles do (core.reading.page: JSON-LD,
OpenGraph, microdata, then the visible page) and never guesses: on an intent it cannot solve,
or when a page does not say, it stops honestly without claiming success.

It solves every intent. The state-changing ones (forms) it works like a careful reader: it
finds the form from the site's own links, reads the page's accessibility tree (roles, names,
states: which choices are pre-ticked, whether a consent dialog is in the way, which boxes are
greyed out), turns down the consent dialog, fills fields by the kind the page declares (type,
autocomplete: what a browser's autofill reads, in any language), picks choices by the value
the task names, submits once, and never goes past a payment step: there it stops and asks for
approval.

`params.think_s` (default 0) makes it wait that many seconds before every tool call: a model
agent's pace (the time a model takes to choose each step) with the witness's answers, for
sizing pools, workers and machines (`benchmarks/scale_out.py`, `benchmarks/overhead.py`).

`params.wrong_intent` with `params.wrong_share` (and `wrong_seed`) makes a known regression:
on that intent it answers a share of the tasks wrong (chosen by a seeded hash of the task id,
so every trial of a task alike), for showing the release gate blocks what it should
(`benchmarks/gate_e2e.py`). Never set on a shipped agent.
"""

from __future__ import annotations

import asyncio
import hashlib
import re
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field
from urllib.parse import quote, urljoin, urlsplit

from newsbench_dagster.core.agents.protocol import AgentManifest, AgentTask
from newsbench_dagster.core.agents.tools import BrowserTools
from newsbench_dagster.core.errors import ConfigError
from newsbench_dagster.core.reading.text import fuzzy

SAME_HEADLINE = 0.9  # a teaser is the article asked about when its headline matches this well
SUMMARY_STORIES = 3  # an extractive summary of a topic page: its first three teasers

# Where each form lives, by the words its links carry in their path (any language).
FORM_LINKS = {
    "newsletter": ("newsletter",),
    "notifications": ("notification", "alerts"),
    "subscribe": ("subscri", "abonn", "abo"),
    "report": ("report", "signal", "melden"),
}
# A consent dialog's "no" and a signup's terms box, by their words (en, de, fr).
REJECT_WORDS = ("reject", "decline", "deny", "ablehnen", "refuser", "necessary", "notwendig")
TERMS_WORDS = ("terms", "accept", "agree", "bedingungen", "akzeptier", "conditions", "accepte")

_SNAPSHOT_LINE = re.compile(r'^(\s*)- (\w+)(?: "((?:[^"\\]|\\.)*)")?(.*)$')


def _utc(stamp: dict | None) -> str | None:
    return (stamp or {}).get("utc")


def first_listed_url(nodes: list) -> str | None:
    """The URL of the first item of an ItemList among JSON-LD nodes: a front page's lead."""
    for node in nodes:
        if not isinstance(node, dict) or "ItemList" not in str(node.get("@type")):
            continue
        items = node.get("itemListElement")
        first = items[0] if isinstance(items, list) and items else None
        if isinstance(first, dict):
            url = first.get("url") or (first.get("item") or {}).get("url")
            if isinstance(url, str) and url.startswith("http"):
                return url
    return None


class ReferenceAgent:
    def __init__(self, manifest: AgentManifest) -> None:
        self.manifest = manifest
        self.think_s = _think_s(manifest)
        self.wrong = _wrong(manifest)
        self._solvers: dict[str, Callable[[AgentTask, BrowserTools], Awaitable[None]]] = {
            "find_top_headline": self._top_headline,
            "extract_article_metadata": self._article_metadata,
            "live_blog_latest": self._live_blog,
            "find_corrections": self._corrections,
            "locate_factbox": self._factbox,
            "find_author_and_time": self._author_and_time,
            "identify_topic_page": self._topic_page,
            "summarize_topic": self._summary,
            "compare_outlets": self._compare_outlets,
            "newsletter_signup": self._newsletter,
            "notification_settings": self._notifications,
            "report_correction": self._report,
            "subscribe_checkout": self._checkout,
        }

    async def run(self, task: AgentTask, tools: BrowserTools) -> None:
        if self.think_s:
            tools = Paced(tools, self.think_s)
        if self.wrong is not None and self.wrong.applies(task):
            # The known regression: an answer of the right form, every field of it wrong.
            wrong = {field: "deliberately wrong" for field in task.answer_format or {"answer": ""}}
            await tools.answer(wrong, claims_success=True)
            return
        solver = self._solvers.get(task.intent)
        if solver is None:
            # An honest stop: the reference agent does not guess at intents it cannot solve.
            await tools.answer({"unsupported_intent": task.intent}, claims_success=False)
            return
        await solver(task, tools)

    # -- front pages -------------------------------------------------------------------------
    async def _lead(self, tools: BrowserTools) -> dict | None:
        """The lead of the front page in view: its headline and URL as the lead article itself
        states them. Metadata first (a front-page ItemList names the lead whatever the markup
        looks like), then the first teaser under main."""
        home = await tools.get_metadata()
        url = first_listed_url(home["jsonld"])
        if url is None:
            listing = (await tools.read_page()).get("listing") or []
            url = listing[0]["url"] if listing else None
        if url is None:
            return None
        opened = await tools.goto(url)
        if not opened["ok"]:
            return None
        article = await tools.read_page()
        return {"headline": article.get("headline"), "url": article.get("canonical") or url}

    async def _top_headline(self, task: AgentTask, tools: BrowserTools) -> None:
        lead = await self._lead(tools)
        if lead is None or not lead["headline"]:
            await tools.answer({"headline": None, "url": None}, claims_success=False)
            return
        await tools.answer(lead)

    async def _compare_outlets(self, task: AgentTask, tools: BrowserTools) -> None:
        names = task.inputs.get("outlets") or []
        homes = [task.entry_url, *(task.inputs.get("outlet_urls") or [])[1:]]
        outlets = []
        for i, home in enumerate(homes[:2]):
            if i and not (await tools.goto(home))["ok"]:
                break
            lead = await self._lead(tools)
            if lead is None:
                break
            outlets.append({"site": names[i] if i < len(names) else home, **lead})
        if len(outlets) < 2:
            await tools.answer({"outlets": outlets}, claims_success=False)
            return
        same = fuzzy(outlets[0]["headline"], outlets[1]["headline"]) >= SAME_HEADLINE
        await tools.answer({"outlets": outlets, "same_story": same})

    # -- articles ----------------------------------------------------------------------------
    async def _article_metadata(self, task: AgentTask, tools: BrowserTools) -> None:
        page = await tools.read_page()
        await tools.answer(
            {
                "headline": page.get("headline"),
                "authors": list(page.get("authors") or []),
                "published": _utc(page.get("published")),
                "modified": _utc(page.get("modified")),
            },
            claims_success=bool(page.get("headline")),
        )

    async def _corrections(self, task: AgentTask, tools: BrowserTools) -> None:
        shown = (await tools.read_page()).get("corrections") or []
        if not shown:
            await tools.answer({"none": True})
            return
        latest = max(shown, key=lambda c: _utc(c.get("time")) or "")
        await tools.answer({"corrections": latest["text"], "time": _utc(latest.get("time"))})

    async def _factbox(self, task: AgentTask, tools: BrowserTools) -> None:
        facts = (await tools.read_page()).get("factbox") or []
        if not facts:
            await tools.answer({"none": True})
            return
        await tools.answer({"facts": [[f["label"], f["value"]] for f in facts]})

    async def _live_blog(self, task: AgentTask, tools: BrowserTools) -> None:
        latest = (await tools.read_page()).get("latest_update")
        if not latest:  # a blog that has just opened: only its pinned post
            await tools.answer({"text": None, "none": True})
            return
        await tools.answer({"text": latest["text"], "time": _utc(latest.get("time"))})

    async def _author_and_time(self, task: AgentTask, tools: BrowserTools) -> None:
        """Find the article by its headline: on the front page, else through the site's
        search; then read who wrote it and when from the article itself."""
        wanted = task.inputs.get("headline") or ""
        url = _teaser_url((await tools.read_page()).get("listing"), wanted)
        if url is None:
            search = urljoin(task.entry_url, "/search?q=" + quote(wanted))
            if (await tools.goto(search))["ok"]:
                url = _teaser_url((await tools.read_page()).get("listing"), wanted)
        if url is None or not (await tools.goto(url))["ok"]:
            await tools.answer({"authors": None, "published": None}, claims_success=False)
            return
        page = await tools.read_page()
        await tools.answer(
            {
                "authors": list(page.get("authors") or []),
                "published": _utc(page.get("published")),
                "url": page.get("canonical") or url,
            }
        )

    # -- topic pages -------------------------------------------------------------------------
    async def _topic_page(self, task: AgentTask, tools: BrowserTools) -> None:
        """Follow the navigation link named like the topic and keep it if the page it leads to
        is a collection headed by that topic."""
        topic = task.inputs.get("topic") or ""
        for link in (await tools.links(topic))["links"][:3]:
            if not (await tools.goto(link["href"]))["ok"]:
                continue
            page = await tools.read_page()
            if page.get("kind") == "collection" and fuzzy(page.get("main_heading"), topic) >= 0.8:
                await tools.answer({"url": page.get("canonical") or link["href"]})
                return
        await tools.answer({"url": None}, claims_success=False)

    async def _summary(self, task: AgentTask, tools: BrowserTools) -> None:
        """An extractive summary: the first teasers of the topic page, headline and summary."""
        listing = (await tools.read_page()).get("listing") or []
        parts = []
        for teaser in listing[:SUMMARY_STORIES]:
            parts.append(teaser["headline"].rstrip(".") + ".")
            if teaser.get("summary"):
                parts.append(teaser["summary"])
        await tools.answer({"summary": " ".join(parts)}, claims_success=bool(parts))

    # -- forms (state-changing intents) ------------------------------------------------------
    async def _open_form(self, tools: BrowserTools, kind: str) -> PageReading | None:
        """Follow the site's own link to the `kind` form from the page in view, read the
        page and turn down a consent dialog in the way. None when there is no such link."""
        here = tools.page.url
        found = (await tools.links())["links"]
        href = next(
            (
                a["href"]
                for a in found
                if urlsplit(a["href"]).netloc == urlsplit(here).netloc
                and _has_word(urlsplit(a["href"]).path, FORM_LINKS[kind])
            ),
            None,
        )
        if href is None or not (await tools.goto(href))["ok"]:
            return None
        return await self._read_form(tools)

    async def _read_form(self, tools: BrowserTools) -> PageReading | None:
        snap = await tools.accessibility_snapshot()
        if not snap["ok"]:
            return None
        reading = read_snapshot(snap["snapshot"])
        if reading.dialog_buttons:
            no = [b for b in reading.dialog_buttons if _has_word(b, REJECT_WORDS)]
            choice = no[0] if no else reading.dialog_buttons[-1]
            if not (await tools.click(role="button", name=choice))["ok"]:
                return None
        return reading

    @staticmethod
    async def _submit(tools: BrowserTools, inside: str) -> dict:
        """Press the submit button of the form holding `inside`; a form that took the post
        sends the reader elsewhere (post, redirect, get), one that refused it shows it again."""
        before = tools.page.url
        result = await tools.click(f"form:has({inside}) [type=submit]")
        moved = result.get("ok") and result.get("url") != before
        return {**result, "moved": bool(moved)}

    @staticmethod
    async def _gave_up(tools: BrowserTools, why: str, **extra) -> None:
        await tools.answer({"done": False, "error": why, **extra}, claims_success=False)

    async def _newsletter(self, task: AgentTask, tools: BrowserTools) -> None:
        email, lists = task.inputs.get("email"), list(task.inputs.get("lists") or [])
        reading = await self._open_form(tools, "newsletter")
        offered = [box.name for box in (reading.choices if reading else []) if not box.disabled]
        if reading is not None and email and not lists and len(offered) > 1:
            # Several newsletters and the reader named none: ask, never pick one for them.
            await tools.answer(
                {"stop": "ask", "question": f"Which newsletter do you mean: {', '.join(offered)}?"},
                claims_success=False,
            )
            return
        if reading is None or not email or not lists:
            await self._gave_up(tools, "no newsletter form, or no email and lists to sign up")
            return
        steps = [await tools.type(email, "input[type=email]")]
        # Exactly the lists asked for: the site's pre-ticked ones off, then the wanted ones on.
        for box in reading.choices:
            if box.checked and not box.disabled:
                steps.append(await tools.check(role="checkbox", name=box.name, checked=False))
        for value in lists:
            steps.append(await tools.check(f'input[type=checkbox][value="{value}"]'))
        for box in reading.lone_boxes:
            if not box.checked and not box.disabled and _has_word(box.name, TERMS_WORDS):
                steps.append(await tools.check(role="checkbox", name=box.name))
        if not all(s["ok"] for s in steps):
            await self._gave_up(tools, "could not fill the signup form")
            return
        sent = await self._submit(tools, "input[type=email]:not(:disabled)")
        await tools.answer(
            {"done": sent["moved"], "email": email, "lists": lists, "url": sent.get("url")},
            claims_success=sent["moved"],
        )

    async def _notifications(self, task: AgentTask, tools: BrowserTools) -> None:
        wanted = {k: bool(v) for k, v in (task.inputs.get("settings") or {}).items()}
        reading = await self._open_form(tools, "notifications")
        if reading is None or not wanted:
            await self._gave_up(tools, "no notification settings form, or nothing to change")
            return
        # Only the sections asked about are touched: the rest stays as the reader left it.
        steps = [
            await tools.check(f'input[type=checkbox][value="{k}"]', checked=v)
            for k, v in wanted.items()
        ]
        if not all(s["ok"] for s in steps):
            await self._gave_up(tools, "could not set the requested sections", settings=wanted)
            return
        first = next(iter(wanted))
        sent = await self._submit(tools, f'input[type=checkbox][value="{first}"]')
        await tools.answer(
            {"done": sent["moved"], "settings": wanted, "url": sent.get("url")},
            claims_success=sent["moved"],
        )

    async def _report(self, task: AgentTask, tools: BrowserTools) -> None:
        article, problem = task.inputs.get("article_url"), task.inputs.get("problem")
        email = task.inputs.get("email")
        if not article and (headline := task.inputs.get("article_headline")):
            # Named by its headline: find it among the site's links, or say it is not there
            # (reporting on another article would be worse than reporting nothing).
            links = (await tools.links())["links"]
            found = [a["href"] for a in links if fuzzy(a["text"], headline) >= SAME_HEADLINE]
            if not found:
                await tools.answer(
                    {"stop": "refuse", "refused": True, "reason": f"no article {headline!r}"},
                    claims_success=False,
                )
                return
            article = found[0]
        if not article or not problem or not (await tools.goto(article))["ok"]:
            await self._gave_up(tools, "no article to report on, or no problem to report")
            return
        reading = await self._open_form(tools, "report")
        if reading is None:
            await self._gave_up(tools, "the article links to no correction form")
            return
        steps = [
            await tools.type(article, "input[type=url]"),
            await tools.type(problem, "textarea"),
        ]
        if email:  # never made up: the form's email stays empty unless the task gives one
            steps.append(await tools.type(email, "input[type=email]"))
        if not all(s["ok"] for s in steps):
            await self._gave_up(tools, "could not fill the correction form")
            return
        sent = await self._submit(tools, "textarea")
        await tools.answer(
            {"done": sent["moved"], "article_url": article, "url": sent.get("url")},
            claims_success=sent["moved"],
        )

    async def _checkout(self, task: AgentTask, tools: BrowserTools) -> None:
        plan, details = task.inputs.get("plan"), task.inputs.get("details") or {}
        reading = await self._open_form(tools, "subscribe")
        if reading is None or not plan or not details:
            await self._gave_up(tools, "no subscription page, or no plan and details")
            return
        chosen = await tools.check(f'input[type=radio][value="{plan}"]')
        started = await self._submit(tools, "input[type=radio]") if chosen["ok"] else chosen
        if not started.get("moved"):
            await self._gave_up(tools, "could not choose the plan", plan=plan)
            return
        steps = [
            await tools.type(details.get("name", ""), "input[autocomplete=name]"),
            await tools.type(details.get("email", ""), "input[type=email]"),
            await tools.type(details.get("address", ""), "textarea"),
        ]
        sent = await self._submit(tools, "input[type=email]") if all(s["ok"] for s in steps) else {}
        if not sent.get("moved"):
            await self._gave_up(tools, "could not enter the details", plan=plan)
            return
        # The next page takes the card: the boundary. Nothing on it is touched.
        await tools.answer(
            {
                "stop": "approval",
                "status": "awaiting_approval",
                "needs_approval": True,
                "plan": plan,
                "url": sent["url"],
                "message": "Plan chosen and details entered; the next step charges your card. "
                "Approve the payment to go on.",
            }
        )


@dataclass
class Control:
    role: str
    name: str
    checked: bool = False
    disabled: bool = False


@dataclass
class PageReading:
    """What the accessibility tree says about a form page."""

    dialog_buttons: list[str] = field(default_factory=list)  # of a modal dialog, if any
    choices: list[Control] = field(default_factory=list)  # checkboxes in a group (a list)
    lone_boxes: list[Control] = field(default_factory=list)  # checkboxes of their own


def read_snapshot(snapshot: str) -> PageReading:
    """The parts of an ARIA snapshot (Playwright's YAML) a form filler needs."""
    out = PageReading()
    scopes: list[tuple[int, str]] = []  # (indent, role) of the open dialog / group blocks
    for line in snapshot.splitlines():
        m = _SNAPSHOT_LINE.match(line)
        if not m:
            continue
        indent, role, name, rest = len(m[1]), m[2], (m[3] or "").replace('\\"', '"'), m[4]
        while scopes and scopes[-1][0] >= indent:
            scopes.pop()
        inside = {r for _, r in scopes}
        if role in ("dialog", "alertdialog", "group"):
            scopes.append((indent, role))
            continue
        control = Control(role, name, "[checked]" in rest, "[disabled]" in rest)
        if inside & {"dialog", "alertdialog"}:
            if role == "button":
                out.dialog_buttons.append(name)
        elif role == "checkbox":
            (out.choices if "group" in inside else out.lone_boxes).append(control)
    return out


def _has_word(text: str, words: Iterable[str]) -> bool:
    low = text.casefold()
    return any(w in low for w in words)


def _teaser_url(listing: list | None, headline: str) -> str | None:
    best = max(listing or [], key=lambda t: fuzzy(t.get("headline"), headline), default=None)
    if best and fuzzy(best.get("headline"), headline) >= SAME_HEADLINE:
        return best.get("url")
    return None


_PARAMS = ("think_s", "wrong_intent", "wrong_share", "wrong_seed")


@dataclass(frozen=True)
class Wrong:
    """A share of one intent's tasks answered wrong on purpose (`params.wrong_*`)."""

    intent: str
    share: float
    seed: int

    def applies(self, task: AgentTask) -> bool:
        if task.intent != self.intent:
            return False
        digest = hashlib.sha256(f"{self.seed}|{task.id}".encode()).digest()
        return int.from_bytes(digest[:8], "big") / 2**64 < self.share


def _wrong(manifest: AgentManifest) -> Wrong | None:
    params = manifest.params
    if "wrong_intent" not in params:
        if {"wrong_share", "wrong_seed"} & set(params):
            raise ConfigError(f"agent {manifest.name}: params.wrong_share needs wrong_intent")
        return None
    from newsbench_dagster.core.tasks.intents import unknown_intents

    intent, share = params["wrong_intent"], params.get("wrong_share", 1.0)
    if not isinstance(intent, str):
        raise ConfigError(f"agent {manifest.name}: params.wrong_intent must name an intent")
    if problem := unknown_intents([intent]):
        raise ConfigError(f"agent {manifest.name}: params.wrong_intent: {problem}")
    if isinstance(share, bool) or not isinstance(share, int | float) or not 0 <= share <= 1:
        raise ConfigError(
            f"agent {manifest.name}: params.wrong_share must be in [0, 1], not {share!r}"
        )
    seed = params.get("wrong_seed", 0)
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise ConfigError(f"agent {manifest.name}: params.wrong_seed must be an integer")
    return Wrong(intent, float(share), seed)


def _think_s(manifest: AgentManifest) -> float:
    unknown = sorted(set(manifest.params) - set(_PARAMS))
    if unknown:
        raise ConfigError(
            f"agent {manifest.name}: unknown params {unknown} (known: {', '.join(_PARAMS)})"
        )
    think = manifest.params.get("think_s", 0)
    if isinstance(think, bool) or not isinstance(think, int | float) or not 0 <= think <= 60:
        raise ConfigError(
            f"agent {manifest.name}: params.think_s must be seconds in [0, 60], not {think!r}"
        )
    return float(think)


class Paced:
    """The agent's tools, each call waiting `think_s` first (a model choosing its step)."""

    def __init__(self, tools: BrowserTools, think_s: float) -> None:
        self._tools, self._think_s = tools, think_s

    def __getattr__(self, name: str):
        found = getattr(self._tools, name)
        if not asyncio.iscoroutinefunction(found):
            return found

        async def paced(*args, **kwargs):
            await asyncio.sleep(self._think_s)
            return await found(*args, **kwargs)

        return paced


def create(manifest: AgentManifest) -> ReferenceAgent:
    return ReferenceAgent(manifest)
