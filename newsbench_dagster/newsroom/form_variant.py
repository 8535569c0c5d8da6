"""Variant: one seeded layout of the form pages, so agents cannot overfit one layout.

A variant seed (header X-Newsroom-Variant or query nr_variant) picks how fields are labelled,
how deeply they are nested, how long the submit button stays disabled, which harmless decoy
controls appear, the order of the fields and the element ids. The task and its truth never vary:
field `name` attributes, URLs and server-side semantics are the same for every seed, so a form
posted from any variant makes the same change. No seed means the canonical, plainest layout.
Templates read the variant as `v`; variation.py renders and describes variants from the shell.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any, TypeVar

from .exchange import Request
from .seeding import stable_int, stable_order

T = TypeVar("T")

# How a visible label is tied to its control: <label for=id>, a wrapping <label>, or only an
# aria-label (the visible caption is then plain text, associated with nothing).
LABEL_MODES = ("for", "wrap", "aria")
MAX_DEPTH = 3  # extra wrapper <div>s around each field
MAX_HYDRATION_MS = 1500
DECOYS = ("cancel", "learn_more", "later")  # extra controls that change nothing
MAX_DECOYS = 2
ID_PREFIXES = ("", "f-", "fld_", "input-", "nr-")


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
