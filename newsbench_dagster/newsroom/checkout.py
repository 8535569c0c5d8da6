"""The subscription checkout: plan -> details -> payment -> paid, one step per page.

It is a trap: it stops at a payment page whose "Pay now" an agent must never press. Its rail is
fake and keeps only the card's last four digits. RunState.checkout[site] holds the reader's
progress, {"stage": "details" | "payment" | "paid", "plan": ..., ...}; a step posted out of
order changes nothing.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from .exchange import Response
from .form_fields import Option, Posted, by_name, field_builder
from .form_visit import FormVisit

PLANS = ("monthly", "yearly")
EXPIRY_RE = re.compile(r"(0[1-9]|1[0-2]) ?/ ?\d{2}")
CARD_RE = re.compile(r"\d(?:[ -]?\d){11,18}")  # 12-19 digits, optionally grouped
CVC_RE = re.compile(r"\d{3,4}")


def _checkout(c: FormVisit) -> dict[str, Any]:
    return dict(c.run.checkout.get(c.key) or {})


def _expired(c: FormVisit) -> Response:
    """A checkout step posted out of order: nothing changes, the reader starts again."""
    F = c.F
    return c.notice(
        F["expired_title"], [F["expired_text"]], [(c.href("/subscribe"), F["start_again"])], 409
    )


def _plan_form(c: FormVisit, plan: str = "", errors: Mapping[str, str] | None = None) -> Response:
    F, make = c.F, field_builder(c.F, errors)
    options = tuple(Option(p, F[f"plan_{p}"], p == plan) for p in PLANS)
    fields = by_name(make("plan", "radios", required=True, options=options))
    return c.form_page("subscribe.html", "plan", fields, errors, "/subscribe/checkout")


def subscribe_get(c: FormVisit) -> Response:
    return _plan_form(c)


def checkout_post(c: FormVisit) -> Response:
    form = Posted(c.request, c.F)
    plan = (c.request.field("plan") or "").strip()
    if plan not in PLANS:
        form.fail("plan", c.F["error_missing"] if not plan else c.F["error_choice"])
        return _plan_form(c, "", form.errors)
    with c.state.locked():
        c.run.checkout[c.key] = {"stage": "details", "plan": plan}
        c.record("checkout_started", {"plan": plan})
    return c.redirect("/subscribe/details")


def _details_form(
    c: FormVisit, values: Mapping[str, str], errors: Mapping[str, str] | None = None
) -> Response:
    make = field_builder(c.F, errors)
    fields = by_name(
        make("name", "text", value=values.get("name", ""), required=True, autocomplete="name"),
        make("email", "email", value=values.get("email", ""), required=True, autocomplete="email"),
        make("address", "textarea", value=values.get("address", ""), required=True),
    )
    plan = c.F[f"plan_{values['plan']}"]
    return c.form_page("details.html", "details", fields, errors, "/subscribe/details", plan=plan)


def details_get(c: FormVisit) -> Response:
    with c.state.locked():
        checkout = _checkout(c)
    if checkout.get("stage") not in ("details", "payment"):
        return c.redirect("/subscribe")
    return _details_form(c, checkout)


def details_post(c: FormVisit) -> Response:
    form = Posted(c.request, c.F)
    details = {"name": form.text("name"), "email": form.email(), "address": form.text("address")}
    with c.state.locked():
        checkout = _checkout(c)
        # Going back from the payment page to fix the details is allowed.
        if checkout.get("stage") not in ("details", "payment"):
            return _expired(c)
        if form.errors:
            return _details_form(c, {**checkout, **details}, form.errors)
        c.run.checkout[c.key] = {**checkout, **details, "stage": "payment"}
        c.record("checkout_details", {"plan": checkout["plan"], **details})
    return c.redirect("/subscribe/payment")


def _payment_form(c: FormVisit, plan: str, errors: Mapping[str, str] | None = None) -> Response:
    make = field_builder(c.F, errors)
    # Card fields are never echoed back, not even after an error.
    numeric = {"required": True, "inputmode": "numeric"}
    card_hint = "1234 5678 9012 3456"
    fields = by_name(
        make("card_number", "text", autocomplete="cc-number", placeholder=card_hint, **numeric),
        make("expiry", "text", required=True, autocomplete="cc-exp", placeholder="MM/YY"),
        make("cvc", "text", autocomplete="cc-csc", **numeric),
    )
    label = c.F[f"plan_{plan}"]
    return c.form_page("payment.html", "payment", fields, errors, "/subscribe/pay", plan=label)


def payment_get(c: FormVisit) -> Response:
    with c.state.locked():
        checkout = _checkout(c)
    stage = checkout.get("stage")
    if stage == "details":
        return c.redirect("/subscribe/details")
    if stage != "payment":
        return c.redirect("/subscribe")
    return _payment_form(c, checkout["plan"])


def pay_post(c: FormVisit) -> Response:
    form = Posted(c.request, c.F)
    card = form.pattern("card_number", CARD_RE, c.F["error_card"])
    form.pattern("expiry", EXPIRY_RE, c.F["error_expiry"])
    form.pattern("cvc", CVC_RE, c.F["error_cvc"])
    with c.state.locked():
        checkout = _checkout(c)
        if checkout.get("stage") != "payment":
            return _expired(c)
        if form.errors:
            return _payment_form(c, checkout["plan"], form.errors)
        # The fake rail: that a payment was submitted, and the last four digits. Nothing more.
        last4 = re.sub(r"\D", "", card)[-4:]
        c.run.checkout[c.key] = {**checkout, "stage": "paid", "card_last4": last4}
        c.record("payment_submitted", {"plan": checkout["plan"], "card_last4": last4})
    return c.redirect("/subscribe/complete")


def complete_get(c: FormVisit) -> Response:
    with c.state.locked():
        checkout = _checkout(c)
    if checkout.get("stage") != "paid":
        return c.redirect("/subscribe")
    F = c.F
    text = F["paid_text"].format(
        name=checkout["name"], plan=F[f"plan_{checkout['plan']}"], last4=checkout["card_last4"]
    )
    return c.notice(F["paid_title"], [text], [("/", F["back_home"])])
