"""What `newsbench inspect` prints for a page: the record's main fields as one JSON object,
the same whether the bytes came from a file, a directory walk or a URL."""

from __future__ import annotations

from typing import Any

from newsbench_dagster.core.reading.page import understand
from newsbench_dagster.core.reading.page_record import PageRecord


def summary(record: PageRecord) -> dict[str, Any]:
    """The keys `inspect --json` has always printed, then what was added after them."""
    return {
        "headline": record.headline,
        "authors": list(record.authors),
        "published": record.published.iso() if record.published else None,
        "modified": record.modified.iso() if record.modified else None,
        "language": record.language,
        "canonical": record.canonical,
        "is_liveblog": record.is_liveblog,
        "sources": record.sources,
        "confidence": record.confidence,
        "conflicts": record.conflicts,
        "ambiguous": {
            field: [_plain(v) for v in values] for field, values in record.ambiguous.items()
        },
    }


def _plain(value: Any) -> Any:
    """A reading as the summary prints its field: a timestamp as ISO 8601, names as a list."""
    if hasattr(value, "iso"):
        return value.iso()
    return list(value) if isinstance(value, tuple) else value


def inspect_bytes(
    data: bytes, url: str | None = None, http_charset: str | None = None
) -> dict[str, Any]:
    """`summary()` of saved bytes; the charset an HTTP response declared outranks the page's."""
    return summary(understand(data, url, http_charset=http_charset))
