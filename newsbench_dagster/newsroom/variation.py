"""Seeded variation of the form pages, from Python or the shell: render one form page of a site
in the layout a variant seed picks (generate), or say what that layout is (describe).

The layouts themselves are form_variant.Variant; the field names, URLs and semantics of the
forms never vary (forms.py).

    python -m newsbench_dagster.newsroom.variation --seed 3 --site harbor --page newsletter
"""

from __future__ import annotations

import argparse
import json
import sys
from datetime import UTC, datetime
from typing import Any
from urllib.parse import urlencode

from . import forms
from .exchange import VARIANT_HEADER, Request
from .form_fields import FORM_FIELDS
from .form_variant import Variant
from .state import NewsroomState
from .world import DEFAULT_SEED, Newsroom

# The instant generate() renders at by default, so its output is byte-identical across runs.
GENERATE_AT = datetime(2026, 3, 10, 12, 0, tzinfo=UTC)
PAGES = {
    "newsletter": "/newsletter",
    "notifications": "/account/notifications",
    "report": "/corrections/report",
    "subscribe": "/subscribe",
    "details": "/subscribe/details",
    "payment": "/subscribe/payment",
}
# Checkout pages are only reachable after the earlier steps; generate() posts those first.
_PLAN_STEP = ("/subscribe/checkout", {"plan": "monthly"})
_DETAILS_STEP = (
    "/subscribe/details",
    {"name": "Alex Example", "email": "alex@example.com", "address": "1 Example Street"},
)
_STEPS = {"details": [_PLAN_STEP], "payment": [_PLAN_STEP, _DETAILS_STEP]}


def generate(
    site_key: str,
    page: str,
    seed: int | None,
    newsroom: Newsroom | None = None,
    at: datetime | None = None,
) -> str:
    """The HTML of one form page of a site in the variant of `seed` (None: canonical)."""
    if page not in PAGES:
        raise ValueError(f"unknown page {page!r}; one of {', '.join(PAGES)}")
    newsroom = newsroom or Newsroom()
    site = newsroom.site(site_key)
    at = at or GENERATE_AT
    state = NewsroomState(newsroom.seed, [spec.key for spec in newsroom.sites])
    headers = {"X-Newsroom-Run": "generate"}
    if seed is not None:
        headers[VARIANT_HEADER] = str(seed)
    for path, fields in _STEPS.get(page, []):
        post = Request.build(path, "POST", headers, urlencode(fields).encode())
        forms.handle(site, post, at, state)
    response = forms.handle(site, Request.build(PAGES[page], "GET", headers), at, state)
    if response is None or response.status != 200:
        raise RuntimeError(f"{site_key} {page}: no page ({response and response.status})")
    return response.body.decode("utf-8")


def describe(seed: int) -> dict[str, Any]:
    """The variation a seed chooses, and the field order it gives every form."""
    variant = Variant.from_seed(seed)
    fields = {form: variant.arrange(form, names) for form, names in FORM_FIELDS.items()}
    return {"variant": variant.describe(), "field_order": fields}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m newsbench_dagster.newsroom.variation")
    parser.add_argument("--seed", type=int, required=True, help="variant seed")
    parser.add_argument("--site", required=True, help="site key, e.g. harbor")
    parser.add_argument("--page", choices=sorted(PAGES), required=True)
    parser.add_argument("--world-seed", type=int, default=DEFAULT_SEED)
    parser.add_argument("--describe", action="store_true", help="print the variation as JSON")
    args = parser.parse_args(argv)

    newsroom = Newsroom(seed=args.world_seed)
    if args.site not in {spec.key for spec in newsroom.sites}:
        parser.error(f"unknown site {args.site!r}")
    if args.describe:
        json.dump(describe(args.seed), sys.stdout, indent=2)
        sys.stdout.write("\n")
        return
    sys.stdout.write(generate(args.site, args.page, args.seed, newsroom))


if __name__ == "__main__":
    main()
