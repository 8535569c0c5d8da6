"""Seeded variation of the form pages' markup, so agents cannot overfit one layout.

A variant seed (header X-Newsroom-Variant or query nr_variant) picks how fields are labelled,
how deeply they are nested, how long the submit button stays disabled, which harmless decoy
controls appear, the order of the fields and the element ids. The task and its truth never vary:
field `name` attributes, URLs and server-side semantics are the same for every seed, so a form
posted from any variant makes the same change. No seed means the canonical, plainest layout.

    python -m newsbench_dagster.newsroom.variation --seed 3 --site harbor --page newsletter
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from typing import Any, TypeVar
from urllib.parse import urlencode

from .exchange import VARIANT_HEADER, Request
from .world import DEFAULT_SEED, Newsroom, stable_int, stable_order

T = TypeVar("T")

# How a visible label is tied to its control: <label for=id>, a wrapping <label>, or only an
# aria-label (the visible caption is then plain text, associated with nothing).
LABEL_MODES = ("for", "wrap", "aria")
MAX_DEPTH = 3  # extra wrapper <div>s around each field
MAX_HYDRATION_MS = 1500
DECOYS = ("cancel", "learn_more", "later")  # extra controls that change nothing
MAX_DECOYS = 2
ID_PREFIXES = ("", "f-", "fld_", "input-", "nr-")

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


@dataclass(frozen=True)
class Variant:
    """One seeded layout of the form pages. Templates read it as `v`."""

    seed: int | None = None  # None: the canonical layout
    labels: str = "for"
    depth: int = 0
    hydration_ms: int = 0
    decoys: tuple[str, ...] = ()
    id_prefix: str = ""
    id_suffix: str = ""

    @classmethod
    def canonical(cls) -> Variant:
        return cls()

    @classmethod
    def from_seed(cls, seed: int) -> Variant:
        def pick(name: str, n: int) -> int:
            # hashlib via stable_int: hash() is salted per process, so variants would drift.
            return stable_int("variant", seed, name) % n

        n_decoys = pick("decoys", MAX_DECOYS + 1)
        decoys = tuple(
            DECOYS[i] for i in stable_order(len(DECOYS), "variant", seed, "decoy")[:n_decoys]
        )
        suffix = f"-{stable_int('variant', seed, 'suffix') % 0x10000:04x}" if pick("sfx", 2) else ""
        return cls(
            seed=seed,
            labels=LABEL_MODES[pick("labels", len(LABEL_MODES))],
            depth=pick("depth", MAX_DEPTH + 1),
            hydration_ms=pick("hydration", MAX_HYDRATION_MS + 1),
            decoys=decoys,
            id_prefix=ID_PREFIXES[pick("prefix", len(ID_PREFIXES))],
            id_suffix=suffix,
        )

    @classmethod
    def for_request(cls, request: Request) -> Variant:
        seed = request.variant
        return cls.canonical() if seed is None else cls.from_seed(seed)

    def id(self, form: str, name: str) -> str:
        """The element id of a control; the form name keeps ids unique on pages with two forms."""
        return f"{self.id_prefix}{form}-{name}{self.id_suffix}"

    def arrange(self, form: str, items: Sequence[T]) -> list[T]:
        """The items (fields of one form) in this variant's order."""
        if self.seed is None:
            return list(items)
        order = stable_order(len(items), "variant", self.seed, "order", form)
        return [items[i] for i in order]

    def describe(self) -> dict[str, Any]:
        return {**asdict(self), "decoys": list(self.decoys)}


def generate(
    site_key: str,
    page: str,
    seed: int | None,
    newsroom: Newsroom | None = None,
    at: datetime | None = None,
) -> str:
    """The HTML of one form page of a site in the variant of `seed` (None: canonical)."""
    from . import forms  # forms imports this module
    from .state import NewsroomState

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
    from .forms import FORM_FIELDS  # forms imports this module

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
