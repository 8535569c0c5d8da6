"""Merging two recording sessions of the same task into one WARC: the earlier session (by
recording clock) wins every request both hold, the later one adds what the earlier never
asked for.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from newsbench_dagster.core.replay.warc import (
    exchanges_from_warc,
    recording_clock,
    warc_records,
    warc_writer,
)


def _session(path: str | Path) -> dict:
    """A recording's clock and its exchanges keyed by request: key -> [(response record id,
    payload digest)], in recorded order."""
    exchanges = exchanges_from_warc(path)
    keys: dict[tuple, list[tuple[str | None, str | None]]] = {}
    for ex in exchanges:
        keys.setdefault((ex.method.upper(), ex.url, ex.body), []).append((ex.record_id, ex.digest))
    clock = recording_clock(path) or min((ex.date or "" for ex in exchanges), default="")
    return {"clock": clock, "keys": keys}


@dataclass
class MergeReport:
    out: str
    earlier: str
    later: str
    kept: int = 0  # exchanges of the earlier session
    added: int = 0  # exchanges only the later session has
    duplicates: int = 0  # in both: the earlier copy kept
    changed: list[str] = field(default_factory=list)  # duplicates whose bytes differed

    def as_dict(self) -> dict:
        return dict(self.__dict__)


def merge(a: str | Path, b: str | Path, out: str | Path) -> MergeReport:
    """Two recording sessions of the same task as one WARC: every exchange of the earlier
    session (by recording clock), then the later session's exchanges for requests the
    earlier one never made. Where both hold a request the earlier copy wins, and the
    report says how many did and which of them had changed in between."""
    sa, sb = _session(a), _session(b)
    (first, fs), (second, ss) = sorted(((a, sa), (b, sb)), key=lambda x: x[1]["clock"])
    report = MergeReport(str(out), str(first), str(second), kept=sum(map(len, fs["keys"].values())))
    kept_ids: set[str] = set()
    for key, copies in ss["keys"].items():
        if key not in fs["keys"]:
            kept_ids |= {rid for rid, _ in copies}  # repeats of a new request, all in order
            report.added += len(copies)
            continue
        report.duplicates += len(copies)
        if {d for _, d in copies} != {d for _, d in fs["keys"][key]}:
            report.changed.append(key[1])
    Path(out).parent.mkdir(parents=True, exist_ok=True)
    with open(out, "wb") as fo:
        merged_from = f"{Path(first).name} (wins), {Path(second).name}"
        writer = warc_writer(fo, Path(out).name, fs["clock"], {"merged-from": merged_from})
        for path, keep in ((first, None), (second, kept_ids)):
            with open(path, "rb") as f:
                for _, rec in warc_records(f, path):
                    if rec.rec_type == "warcinfo":
                        continue
                    h = rec.rec_headers
                    if keep is not None:
                        own = h.get_header("WARC-Record-ID")
                        to = h.get_header("WARC-Concurrent-To")
                        if rec.rec_type == "response" and own not in keep:
                            continue
                        if rec.rec_type == "request" and to is not None and to not in keep:
                            continue
                    writer.write_record(rec)
    return report
