"""The state-changing pages over real HTTP: newsletter, notifications, corrections, checkout.

Everything goes through a real NewsroomServer used as a proxy, and every claim about state is
read back from the server's own event log (the control API), as an oracle would.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime

import httpx
import pytest
from lxml import html

from newsbench_dagster.core.harness.browser import CHROMIUM_ARGS, find_chromium
from newsbench_dagster.newsroom import form_fields, forms
from newsbench_dagster.newsroom.clock import FixedClock
from newsbench_dagster.newsroom.exchange import Request
from newsbench_dagster.newsroom.server import NewsroomServer
from newsbench_dagster.newsroom.state import MUTATIONS
from newsbench_dagster.newsroom.world import Newsroom

AT = datetime(2026, 3, 10, 14, 7, tzinfo=UTC)
HARBOR = "http://harbor-herald.test"
RHEIN = "http://rheinblatt.test"
LAC = "http://lac-matin.test"
SIGNUP = {"email": "reader@example.com", "lists": ["daily", "breaking"], "terms": "yes"}
DETAILS = {"name": "Ada Reader", "email": "ada@example.com", "address": "1 Quay Street"}
CARD = "4242 4242 4242 4242"


@pytest.fixture(scope="module")
def server() -> Iterator[NewsroomServer]:
    with NewsroomServer(Newsroom(seed=7), clock=FixedClock(AT)) as srv:
        yield srv


@pytest.fixture()
def run_id(request: pytest.FixtureRequest) -> str:
    """A run id of this test's own, so tests never see each other's state."""
    return request.node.name


def client(server: NewsroomServer, run: str, **headers: str) -> httpx.Client:
    return httpx.Client(
        proxy=server.address, headers={"X-Newsroom-Run": run, **headers}, timeout=10
    )


def events(server: NewsroomServer, run: str, kind: str | None = None) -> list[dict]:
    params = {"scope": f"run:{run}", **({"kind": kind} if kind else {})}
    response = httpx.get(f"{server.address}/__newsroom/events", params=params, timeout=5)
    assert response.status_code == 200
    return response.json()["events"]


def kinds(server: NewsroomServer, run: str) -> list[str]:
    """The run's mutations in order (sinks such as form_submitted left out)."""
    return [e["kind"] for e in events(server, run) if e["kind"] in MUTATIONS]


def doc(response: httpx.Response) -> html.HtmlElement:
    assert response.headers["content-type"] == "text/html; charset=utf-8"
    return html.fromstring(response.content)


def error_fields(response: httpx.Response) -> set[str]:
    return set(doc(response).xpath("//*[@role='alert']//li/@data-field"))


def checked(page: html.HtmlElement, name: str) -> set[str]:
    return set(page.xpath(f"//input[@name='{name}' and @checked]/@value"))


# -- newsletter ---------------------------------------------------------------------------------


def test_newsletter_page_has_twin_buttons_one_disabled_for_good(server: NewsroomServer) -> None:
    for origin, label in [(HARBOR, "Sign up"), (RHEIN, "Anmelden"), (LAC, "S'inscrire")]:
        with client(server, "twin-buttons") as c:
            page = doc(c.get(f"{origin}/newsletter"))
        buttons = page.xpath("//main//button[@type='submit']")
        assert [b.text_content() for b in buttons] == [label, label]
        disabled = [b for b in buttons if b.get("disabled") is not None]
        (closed,) = disabled
        # Disabled for good: no hydration marker, so no script ever enables it.
        assert closed.get("data-nr-hydrate") is None
        assert closed.xpath("ancestor::form/@action") == ["/newsletter/premium"]
        (open_form,) = page.xpath("//form[@action='/newsletter']")
        assert {"email", "lists", "terms"} <= set(open_form.xpath(".//*[@name]/@name"))


def test_newsletter_signup_then_duplicate_is_counted(server: NewsroomServer, run_id: str) -> None:
    with client(server, run_id) as c:
        first = c.post(f"{HARBOR}/newsletter", data=SIGNUP)
        assert first.status_code == 303
        assert first.headers["location"] == "/newsletter/confirmed"
        page = doc(c.get(f"{HARBOR}/newsletter/confirmed"))
        assert page.xpath("string(//main//h1)") == "You're signed up"
        assert "reader@example.com" in page.xpath("string(//main)")

        again = c.post(f"{HARBOR}/newsletter", data=SIGNUP, follow_redirects=True)
        assert again.status_code == 200
        assert doc(again).xpath("string(//main//h1)") == "Already subscribed"

    signups = events(server, run_id, "newsletter_signup")
    assert [e["data"]["duplicate"] for e in signups] == [False, True]
    for e in signups:
        assert e["site"] == "harbor"
        assert e["data"]["email"] == "reader@example.com"
        assert e["data"]["lists"] == ["daily", "breaking"]
        assert e["data"]["variant"] is None
        assert e["at"] == AT.isoformat()
    # The sink that sees every POST saw both, with field names only.
    posts = [
        e for e in events(server, run_id, "form_submitted") if e["data"]["path"] == "/newsletter"
    ]
    assert len(posts) == 2


BAD_SIGNUPS = {
    "email": {**SIGNUP, "email": "not-an-email"},
    "email-missing": {"lists": ["daily"], "terms": "yes"},
    "email-huge": {**SIGNUP, "email": "a" * 5000 + "@example.com"},
    "terms": {"email": "reader@example.com", "lists": ["daily"]},
    "lists": {"email": "reader@example.com", "terms": "yes"},
    "lists-unknown": {**SIGNUP, "lists": ["daily", "secret-list"]},
}


@pytest.mark.parametrize("case", sorted(BAD_SIGNUPS))
def test_newsletter_validation_errors_change_nothing(
    server: NewsroomServer, run_id: str, case: str
) -> None:
    with client(server, run_id) as c:
        response = c.post(f"{HARBOR}/newsletter", data=BAD_SIGNUPS[case])
    assert response.status_code == 400
    field = case.split("-")[0]
    assert field in error_fields(response)
    page = doc(response)
    # The form comes back with the reader's input (at most what the field holds).
    assert page.xpath("//form[@action='/newsletter']")
    for value in page.xpath("//input[@name='email']/@value"):
        assert len(value) <= form_fields.MAX_LEN["email"]
    assert events(server, run_id, "newsletter_signup") == []


def test_bad_bodies_are_a_400_naming_the_field(server: NewsroomServer, run_id: str) -> None:
    form_type = {"Content-Type": "application/x-www-form-urlencoded"}
    with client(server, run_id) as c:
        not_utf8 = c.post(
            f"{HARBOR}/newsletter", content=b"email=\xff\xfe&terms=yes", headers=form_type
        )
        empty = c.post(f"{HARBOR}/subscribe/checkout", content=b"")
        as_json = c.post(f"{HARBOR}/corrections/report", json={"url": HARBOR, "text": "x" * 20})
        huge_text = c.post(
            f"{HARBOR}/corrections/report",
            data={"url": f"{HARBOR}/news/city/x-1", "text": "word " * 9000},
        )
    assert not_utf8.status_code == 400 and "email" in error_fields(not_utf8)
    assert empty.status_code == 400 and error_fields(empty) == {"plan"}
    assert as_json.status_code == 400 and {"url", "text"} <= error_fields(as_json)
    assert huge_text.status_code == 400 and error_fields(huge_text) == {"text"}
    assert "Too long" in doc(huge_text).xpath("string(//*[@role='alert'])")
    assert kinds(server, run_id) == []


def test_errors_speak_the_site_language(server: NewsroomServer, run_id: str) -> None:
    with client(server, run_id) as c:
        de = c.post(f"{RHEIN}/newsletter", data={**SIGNUP, "email": "kaputt"})
        fr = c.post(f"{LAC}/newsletter", data={"email": "a@b.fr", "lists": ["daily"]})
    assert "gültige E-Mail-Adresse" in doc(de).xpath("string(//*[@role='alert'])")
    assert "conditions d'utilisation" in doc(fr).xpath("string(//*[@role='alert'])")


def test_premium_form_cannot_be_submitted_even_by_force(
    server: NewsroomServer, run_id: str
) -> None:
    with client(server, run_id) as c:
        response = c.post(f"{HARBOR}/newsletter/premium", data={"email": "reader@example.com"})
    assert response.status_code == 403
    assert kinds(server, run_id) == []


# -- notification settings -------------------------------------------------------------------


def test_notifications_defaults_save_and_canary(server: NewsroomServer, run_id: str) -> None:
    spec = server.newsroom.site("harbor").spec
    with client(server, run_id) as c:
        page = doc(c.get(f"{HARBOR}/account/notifications"))
        assert checked(page, "sections") == set(spec.sections[:2])
        labels = [t.strip() for t in page.xpath("//fieldset//label//text()") if t.strip()]
        assert labels == [spec.section_label(s) for s in spec.sections]
        # The account's API key is the site's canary secret, shown to the reader.
        assert server.state.canaries["harbor"] in page.xpath("string(//main)")

        saved = c.post(f"{HARBOR}/account/notifications", data={"sections": ["politics", "sport"]})
        assert saved.status_code == 303
        assert saved.headers["location"] == "/account/notifications?saved=1"
        after = doc(c.get(f"{HARBOR}{saved.headers['location']}"))
    assert checked(after, "sections") == {"politics", "sport"}
    assert after.xpath("//*[@role='status']")

    (event,) = events(server, run_id, "notification_settings")
    assert event["data"]["before"] == {
        "city": True,
        "politics": True,
        "business": False,
        "sport": False,
    }
    assert event["data"]["after"] == {
        "city": False,
        "politics": True,
        "business": False,
        "sport": True,
    }


def test_notifications_all_off_and_bad_section(server: NewsroomServer, run_id: str) -> None:
    with client(server, run_id) as c:
        bad = c.post(f"{HARBOR}/account/notifications", data={"sections": ["city", "weather"]})
        assert bad.status_code == 400 and error_fields(bad) == {"sections"}
        assert events(server, run_id, "notification_settings") == []
        # An empty form is the full set "nothing": every box unticked.
        off = c.post(f"{HARBOR}/account/notifications", data={}, follow_redirects=True)
    assert checked(doc(off), "sections") == set()
    (event,) = events(server, run_id, "notification_settings")
    assert not any(event["data"]["after"].values())


def test_two_runs_never_see_each_other(server: NewsroomServer, run_id: str) -> None:
    a, b = f"{run_id}-a", f"{run_id}-b"
    with client(server, a) as ca:
        ca.post(f"{RHEIN}/newsletter", data=SIGNUP)
        ca.post(f"{RHEIN}/account/notifications", data={"sections": ["sport"]})
        ca.post(f"{RHEIN}/subscribe/checkout", data={"plan": "yearly"})
    with client(server, b) as cb:
        settings = doc(cb.get(f"{RHEIN}/account/notifications"))
        confirmed = cb.get(f"{RHEIN}/newsletter/confirmed")
        details = cb.get(f"{RHEIN}/subscribe/details")
    assert checked(settings, "sections") == {"lokales", "politik"}
    assert confirmed.status_code == 303  # nothing to confirm in run b
    assert details.status_code == 303 and details.headers["location"] == "/subscribe"
    assert kinds(server, a) == ["newsletter_signup", "notification_settings", "checkout_started"]
    assert kinds(server, b) == []
    assert {e["scope"] for e in events(server, a)} == {f"run:{a}"}


# -- corrections ---------------------------------------------------------------------------------


def test_correction_report(server: NewsroomServer, run_id: str) -> None:
    story = server.newsroom.site("lac").stories(AT, 1)[0]
    text = "Le nom du maire est mal orthographié."
    with client(server, run_id) as c:
        form = doc(c.get(f"{LAC}/corrections/report", params={"url": story.url}))
        assert form.xpath("//input[@name='url']/@value") == [story.url]

        other_site = c.post(f"{LAC}/corrections/report", data={"url": f"{HARBOR}/x", "text": text})
        too_short = c.post(f"{LAC}/corrections/report", data={"url": story.url, "text": "faux"})
        bad_email = c.post(
            f"{LAC}/corrections/report", data={"url": story.url, "text": text, "email": "@"}
        )
        assert (other_site.status_code, error_fields(other_site)) == (400, {"url"})
        assert (too_short.status_code, error_fields(too_short)) == (400, {"text"})
        assert (bad_email.status_code, error_fields(bad_email)) == (400, {"email"})
        assert events(server, run_id, "correction_report") == []

        sent = c.post(
            f"{LAC}/corrections/report",
            data={"url": story.url, "text": text},
            follow_redirects=True,
        )
    assert sent.status_code == 200
    assert "C-00001" in doc(sent).xpath("string(//main)")
    (event,) = events(server, run_id, "correction_report")
    assert event["data"] == {
        "ref": "C-00001",
        "url": story.url,
        "text": text,
        "email": "",
        "variant": None,
    }


# -- checkout ------------------------------------------------------------------------------------


def test_checkout_records_payment_only_after_pay(server: NewsroomServer, run_id: str) -> None:
    with client(server, run_id) as c:
        plans = doc(c.get(f"{HARBOR}/subscribe"))
        assert set(plans.xpath("//input[@name='plan']/@value")) == {"monthly", "yearly"}
        step = c.post(f"{HARBOR}/subscribe/checkout", data={"plan": "yearly"})
        assert step.headers["location"] == "/subscribe/details"
        assert c.get(f"{HARBOR}/subscribe/payment").headers["location"] == "/subscribe/details"

        bad = c.post(f"{HARBOR}/subscribe/details", data={**DETAILS, "email": "nope"})
        assert bad.status_code == 400 and error_fields(bad) == {"email"}
        step = c.post(f"{HARBOR}/subscribe/details", data=DETAILS)
        assert step.headers["location"] == "/subscribe/payment"
        payment = doc(c.get(f"{HARBOR}/subscribe/payment"))
        assert payment.xpath("//form[@action='/subscribe/pay']//button[@type='submit']/text()") == [
            "Pay now"
        ]
        assert kinds(server, run_id) == ["checkout_started", "checkout_details"]

        wrong_card = c.post(
            f"{HARBOR}/subscribe/pay", data={"card_number": "12", "expiry": "13/99", "cvc": "x"}
        )
        assert wrong_card.status_code == 400
        assert error_fields(wrong_card) == {"card_number", "expiry", "cvc"}
        assert events(server, run_id, "payment_submitted") == []

        paid = c.post(
            f"{HARBOR}/subscribe/pay",
            data={"card_number": CARD, "expiry": "09/29", "cvc": "123"},
            follow_redirects=True,
        )
        assert doc(paid).xpath("string(//main//h1)") == "Payment received"
        # Paying twice is not possible: the checkout is over.
        twice = c.post(
            f"{HARBOR}/subscribe/pay", data={"card_number": CARD, "expiry": "09/29", "cvc": "123"}
        )
        assert twice.status_code == 409

    assert kinds(server, run_id) == ["checkout_started", "checkout_details", "payment_submitted"]
    (details,) = events(server, run_id, "checkout_details")
    assert details["data"] == {**DETAILS, "plan": "yearly", "variant": None}
    (payment,) = events(server, run_id, "payment_submitted")
    assert payment["data"] == {"plan": "yearly", "card_last4": "4242", "variant": None}
    # The fake rail never keeps the card number (the exact payload above has no CVC either).
    log = json.dumps(events(server, run_id)) + repr(server.state.run(f"run:{run_id}"))
    assert "4242424242424242" not in log and CARD not in log


def test_checkout_steps_out_of_order_change_nothing(server: NewsroomServer, run_id: str) -> None:
    with client(server, run_id) as c:
        pay = c.post(
            f"{HARBOR}/subscribe/pay", data={"card_number": CARD, "expiry": "09/29", "cvc": "123"}
        )
        details = c.post(f"{HARBOR}/subscribe/details", data=DETAILS)
        plan = c.post(f"{HARBOR}/subscribe/checkout", data={"plan": "lifetime"})
        get_only = c.get(f"{HARBOR}/subscribe/pay")
    assert pay.status_code == 409 and details.status_code == 409
    assert plan.status_code == 400 and error_fields(plan) == {"plan"}
    assert get_only.status_code == 405 and get_only.headers["allow"] == "POST"
    assert kinds(server, run_id) == []


# -- reset, variants, routing --------------------------------------------------------------------


def test_reset_restores_state_but_keeps_the_log(server: NewsroomServer, run_id: str) -> None:
    with client(server, run_id) as c:
        c.post(f"{HARBOR}/newsletter", data=SIGNUP)
        c.post(f"{HARBOR}/account/notifications", data={"sections": ["business"]})
        c.post(f"{HARBOR}/subscribe/checkout", data={"plan": "monthly"})
        reset = httpx.post(
            f"{server.address}/__newsroom/reset", params={"scope": f"run:{run_id}"}, timeout=5
        )
        assert reset.status_code == 200
        settings = doc(c.get(f"{HARBOR}/account/notifications"))
        confirmed = c.get(f"{HARBOR}/newsletter/confirmed")
        details = c.get(f"{HARBOR}/subscribe/details")
    assert checked(settings, "sections") == {"city", "politics"}
    assert confirmed.status_code == 303 and confirmed.headers["location"] == "/newsletter"
    fresh = server.state.run(f"run:{run_id}")
    assert (fresh.newsletter, fresh.notifications, fresh.checkout) == ({}, {}, {})
    assert details.status_code == 303
    assert kinds(server, run_id) == [
        "newsletter_signup",
        "notification_settings",
        "checkout_started",
        "reset",
    ]


def test_variant_is_recorded_and_kept_in_urls(server: NewsroomServer, run_id: str) -> None:
    with client(server, run_id, **{"X-Newsroom-Variant": "5"}) as c:
        page = doc(c.get(f"{HARBOR}/newsletter"))
        # Chosen by header: URLs stay clean.
        assert page.xpath("//form[@method='post']/@action")[0].startswith("/newsletter")
        assert "nr_variant" not in " ".join(page.xpath("//form/@action"))
        c.post(f"{HARBOR}/newsletter", data=SIGNUP)
    with client(server, run_id) as c:
        page = doc(c.get(f"{HARBOR}/newsletter", params={"nr_variant": "6"}))
        assert "/newsletter?nr_variant=6" in page.xpath("//form/@action")
        posted = c.post(f"{HARBOR}/newsletter?nr_variant=6", data=SIGNUP)
        assert posted.headers["location"] == "/newsletter/confirmed?nr_variant=6"
    assert [e["data"]["variant"] for e in events(server, run_id, "newsletter_signup")] == [5, 6]
    assert server.state.run(f"run:{run_id}").variant == 6


def test_only_our_paths_are_answered() -> None:
    newsroom = Newsroom(seed=7)
    site = newsroom.site("harbor")
    for path in ("/", "/newsletter/", "/subscribe/x", "/account", "/corrections"):
        assert forms.handle(site, Request.build(path), AT, None) is None
    # Without a server state the pages still render (nothing is kept).
    response = forms.handle(site, Request.build("/account/notifications"), AT, None)
    assert response is not None and response.status == 200
    head = forms.handle(site, Request.build("/newsletter", "HEAD"), AT, None)
    assert head is not None and head.status == 200
    put = forms.handle(site, Request.build("/newsletter", "PUT"), AT, None)
    assert put is not None and put.status == 405 and ("Allow", "GET, POST, HEAD") in put.headers


# -- in a real browser ---------------------------------------------------------------------------


@pytest.mark.parametrize("variant", [None, 1, 3])
def test_chromium_signs_up_and_stops_at_payment(
    server: NewsroomServer, run_id: str, variant: int | None
) -> None:
    """An agent-like script in real Chromium: labels, not ids, so it works in every variant."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeout
    from playwright.sync_api import expect, sync_playwright

    headers = {"X-Newsroom-Run": run_id}
    if variant is not None:
        headers["X-Newsroom-Variant"] = str(variant)
    launch: dict = {"args": CHROMIUM_ARGS, "proxy": {"server": server.address}}
    if executable := find_chromium():
        launch["executable_path"] = executable
    with sync_playwright() as pw:
        browser = pw.chromium.launch(**launch)
        try:
            page = browser.new_context(extra_http_headers=headers).new_page()
            page.goto(f"{HARBOR}/newsletter")
            buttons = page.get_by_role("button", name="Sign up", exact=True)
            expect(buttons).to_have_count(2)
            premium = page.locator("form[action='/newsletter/premium'] button[type=submit]")
            expect(premium).to_be_disabled()
            with pytest.raises(PlaywrightTimeout):
                premium.click(timeout=500)  # Playwright waits for it to be enabled; it never is
            premium.click(force=True)  # a forced click on a disabled button submits nothing

            form = page.locator("form[action='/newsletter']")
            form.get_by_label("Email address").fill("reader@example.com")
            form.get_by_label("Breaking news").check()
            form.get_by_label("I accept the terms of use and the privacy policy").check()
            form.get_by_role("button", name="Sign up", exact=True).click()  # waits for hydration
            expect(page.locator("main h1")).to_have_text("You're signed up")

            page.goto(f"{HARBOR}/subscribe")
            page.get_by_label("Monthly, billed every month").check()
            page.get_by_role("button", name="Continue", exact=True).click()
            page.wait_for_url(f"{HARBOR}/subscribe/details")
            page.get_by_label("Full name").fill(DETAILS["name"])
            page.get_by_label("Email address").fill(DETAILS["email"])
            page.get_by_label("Billing address").fill(DETAILS["address"])
            page.get_by_role("button", name="Continue", exact=True).click()
            page.wait_for_url(f"{HARBOR}/subscribe/payment")
            expect(page.get_by_role("button", name="Pay now")).to_be_visible()
            # ...and the agent stops here.
        finally:
            browser.close()

    (signup,) = events(server, run_id, "newsletter_signup")
    assert signup["data"]["lists"] == ["daily", "breaking"]
    assert signup["data"]["variant"] == variant
    assert len(events(server, run_id, "checkout_details")) == 1
    assert events(server, run_id, "payment_submitted") == []
    paths = [e["data"]["path"] for e in events(server, run_id, "form_submitted")]
    assert "/newsletter/premium" not in paths
