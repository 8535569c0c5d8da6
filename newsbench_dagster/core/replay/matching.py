"""Replay matching: which recorded response answers a request made during replay.

Rules are data (`rules.yaml` here, plus any rules files given): a match key from the
method, the host, the path (collapsed by page-identity rules), the query parameters that
identify content (noise dropped) and, for state-changing requests, only the body fields
that matter. Each decision is tagged `exact`, `fuzzy` (equal after the rules; the rules that
fired are named), `search` (a search matched by the similarity of its words), `blocked`
(analytics, beacons) or `miss`. Repeated identical requests get the recorded responses in
recorded order. Nothing here touches the network: a miss is a miss.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, urlsplit

import yaml

from newsbench_dagster.core.errors import InputFileError
from newsbench_dagster.core.input_files import load_yaml, read_text
from newsbench_dagster.core.replay.redact import clean_body, clean_url
from newsbench_dagster.core.replay.warc import Exchange

DEFAULT_RULES = Path(__file__).with_name("rules.yaml")
_WORD = re.compile(r"\w+", re.UNICODE)


@dataclass
class Decision:
    tag: str  # exact | fuzzy | search | blocked | miss
    rule: str  # what decided it
    exchange: Exchange | None = None


@dataclass
class Rules:
    drop_params: set[str] = field(default_factory=set)
    drop_prefixes: list[str] = field(default_factory=list)
    drop_contains: list[str] = field(default_factory=list)
    keep_params: set[str] = field(default_factory=set)
    block_paths: list[re.Pattern] = field(default_factory=list)
    sites: dict[str, dict] = field(default_factory=dict)

    @classmethod
    def load(cls, *paths: str | Path) -> Rules:
        """The default rules, then each file given. Inferred files are applied before
        hand-written ones, whose `keep_params` win over any drop."""
        docs = [load_yaml(read_text(p), p) or {} for p in paths]
        for p, doc in zip(paths, docs, strict=True):
            if not isinstance(doc, dict):
                raise InputFileError(p, f"a rules file is a mapping, not {type(doc).__name__}")
        base = yaml.safe_load(DEFAULT_RULES.read_text(encoding="utf-8"))
        ordered = [base] + sorted(docs, key=lambda d: d.get("source", "hand") != "inferred")
        rules = cls()
        for doc in ordered:
            rules._merge(doc)
        return rules

    def _merge(self, doc: dict) -> None:
        g = doc.get("generic") or {}
        self.drop_params |= set(g.get("drop_params") or [])
        self.drop_prefixes += list(g.get("drop_param_prefixes") or [])
        self.drop_contains += list(g.get("drop_param_contains") or [])
        self.block_paths += [re.compile(p) for p in g.get("block_paths") or []]
        if doc.get("source", "hand") == "hand":
            self.keep_params |= set(g.get("keep_params") or [])
        for host, site in (doc.get("sites") or {}).items():
            mine = self.sites.setdefault(host, {"drop_params": set(), "keep_params": set()})
            mine["drop_params"] |= set(site.get("drop_params") or [])
            if doc.get("source", "hand") == "hand":
                mine["keep_params"] |= set(site.get("keep_params") or [])
            for kind in ("page_identity", "search", "state"):
                mine.setdefault(kind, [])
                mine[kind] += list(site.get(kind) or [])

    # -- keys ---------------------------------------------------------------------------
    def _dropped(self, host: str, name: str) -> str | None:
        site = self.sites.get(host, {})
        if name in self.keep_params or name in site.get("keep_params", ()):
            return None
        low = name.lower()
        if name in self.drop_params:
            return f"generic:drop {name}"
        if name in site.get("drop_params", ()):
            return f"{host}:drop {name}"
        for p in self.drop_prefixes:
            if low.startswith(p):
                return f"generic:drop {p}*"
        for c in self.drop_contains:
            if c in low:
                return f"generic:drop *{c}*"
        return None

    def key(self, method: str, url: str, body: bytes = b"") -> tuple[tuple, list[str]]:
        """The match key of a request, and the rules that changed it."""
        parts = urlsplit(url)
        host, path, fired = parts.netloc.lower(), parts.path or "/", []
        site = self.sites.get(host, {})
        for rule in site.get("page_identity", []):
            if m := re.search(rule["pattern"], path):
                path = rule["key"].format(*([None] + list(m.groups())))
                fired.append(f"{host}:page {rule['key']}")
                break
        params = []
        for k, v in parse_qsl(parts.query, keep_blank_values=True):
            if why := self._dropped(host, k):
                fired.append(why)
            else:
                params.append((k, v))
        body_key: Any = body
        for rule in site.get("state", []):
            if method.upper() == rule["method"].upper() and re.search(rule["path"], path):
                form = dict(parse_qsl(body.decode("utf-8", "replace")))
                body_key = tuple((f, form.get(f)) for f in rule["fields"])
                fired.append(f"{host}:state {','.join(rule['fields'])}")
                break
        key = (method.upper(), host, path, tuple(sorted(params)), body_key)
        return key, sorted(set(fired))


def _words(text: str) -> set[str]:
    return {w.lower() for w in _WORD.findall(text)}


class Matcher:
    """Answers requests from recorded exchanges by the rules; one matcher per replay run
    (it keeps, per key, how many of the recorded responses have been served)."""

    def __init__(self, exchanges: Sequence[Exchange], rules: Rules) -> None:
        self.rules = rules
        self._exact: dict[tuple, list[Exchange]] = defaultdict(list)
        self._by_key: dict[tuple, list[Exchange]] = defaultdict(list)
        for ex in sorted(exchanges, key=lambda e: e.order):
            # Another tool's WARC may hold credentials and personal data unredacted: keyed
            # as ours would have recorded them.
            url, body = clean_url(ex.url)[0], clean_body(ex.body)[0]
            self._exact[(ex.method.upper(), url, body)].append(ex)
            self._by_key[rules.key(ex.method, url, body)[0]].append(ex)
        self._served: dict[tuple, int] = defaultdict(int)
        self.log: list[dict] = []

    def _next(self, bucket: tuple, found: list[Exchange]) -> Exchange:
        """Repeated requests get the recorded responses in order, then the last again."""
        i = self._served[bucket]
        self._served[bucket] += 1
        return found[min(i, len(found) - 1)]

    def match(self, method: str, url: str, body: bytes = b"") -> Decision:
        # Recordings keep credentials and personal data redacted (URLs and bodies): a live
        # request is compared as it would have been recorded.
        decision = self._decide(method, clean_url(url)[0], clean_body(body)[0])
        self.log.append({"method": method, "url": url, "tag": decision.tag, "rule": decision.rule})
        return decision

    def _decide(self, method: str, url: str, body: bytes) -> Decision:
        parts = urlsplit(url)
        for pattern in self.rules.block_paths:
            if pattern.search(parts.path):
                return Decision("blocked", f"generic:block {pattern.pattern}")
        exact = self._exact.get((method.upper(), url, body))
        key, fired = self.rules.key(method, url, body)
        if exact:
            # One position per key, shared with normalised matches: a repeated resource
            # asked for with and without noise still gets its responses in recorded order.
            return Decision("exact", "identical request", self._next(key, self._by_key[key]))
        if found := self._by_key.get(key):
            return Decision("fuzzy", "; ".join(fired) or "normalised", self._next(key, found))
        if decision := self._search(method, parts, key):
            return decision
        return Decision("miss", "; ".join(fired) or "no recorded request with this key")

    def _search(self, method: str, parts, key: tuple) -> Decision | None:
        host = parts.netloc.lower()
        for rule in self.rules.sites.get(host, {}).get("search", []):
            if not re.search(rule["path"], parts.path):
                continue
            asked = _words(dict(parse_qsl(parts.query)).get(rule["param"], ""))
            best, score = None, 0.0
            for (m, h, path, _, _), found in self._by_key.items():
                if m != method.upper() or h != host or not re.search(rule["path"], path):
                    continue
                recorded = _words(
                    dict(parse_qsl(urlsplit(found[0].url).query)).get(rule["param"], "")
                )
                union = asked | recorded
                s = len(asked & recorded) / len(union) if union else 0.0
                if s > score:
                    best, score = found, s
            if best and score >= float(rule.get("min_similarity", 0.5)):
                return Decision(
                    "search",
                    f"{host}:search {rule['param']} similarity {score:.2f}",
                    self._next(("s", key), best),
                )
        return None


def suggest_rules(exchanges: Sequence[Exchange]) -> dict:
    """Rules inferred from a recording (`source: inferred`, to be reviewed): query
    parameters whose value changed between loads of one path while the response did not;
    canonical ids (paths that differ but end in the same number and serve the same bytes);
    beacon endpoints (tiny images, empty 204s)."""
    by_path: dict[tuple[str, str], list[Exchange]] = defaultdict(list)
    by_digest: dict[str, list[Exchange]] = defaultdict(list)
    blocks: set[str] = set()
    for ex in exchanges:
        if ex.method.upper() != "GET":
            continue
        parts = urlsplit(ex.url)
        by_path[(parts.netloc.lower(), parts.path)].append(ex)
        if ex.digest:
            by_digest[ex.digest].append(ex)
        tiny_image = ex.content_type.startswith("image/") and ex.length <= 100
        if ex.status == 204 or tiny_image:
            blocks.add("^" + re.escape(parts.path) + "$")
    sites: dict[str, dict] = defaultdict(lambda: {"drop_params": set(), "page_identity": []})
    for (host, _), loads in by_path.items():
        same: dict[str, list[Exchange]] = defaultdict(list)
        for ex in loads:
            same[ex.digest or ex.url].append(ex)
        for group in same.values():
            values: dict[str, set[str]] = defaultdict(set)
            for ex in group:
                for k, v in parse_qsl(urlsplit(ex.url).query, keep_blank_values=True):
                    values[k].add(v)
            if len(group) > 1:
                sites[host]["drop_params"] |= {k for k, vs in values.items() if len(vs) > 1}
    for group in by_digest.values():
        paths = {(urlsplit(e.url).netloc.lower(), urlsplit(e.url).path) for e in group}
        ids = {
            re.search(r"(\d+)$", p).group(1) if re.search(r"(\d+)$", p) else None for _, p in paths
        }
        if len(paths) > 1 and len(ids) == 1 and None not in ids:
            host, path = sorted(paths)[0]
            first = path.strip("/").split("/")[0]
            rule = {"pattern": f"^/{re.escape(first)}/.*?(\\d+)$", "key": f"/{first}/{{1}}"}
            if rule not in sites[host]["page_identity"]:
                sites[host]["page_identity"].append(rule)
    return {
        "source": "inferred",
        "generic": {"block_paths": sorted(blocks)},
        "sites": {
            h: {k: sorted(v) if isinstance(v, set) else v for k, v in site.items() if v}
            for h, site in sorted(sites.items())
            if site["drop_params"] or site["page_identity"]
        },
    }


def coverage(log: Iterable[dict]) -> dict[str, Any]:
    """Counts per tag and the unanswered requests, pages (documents) apart from calls
    (everything else): the to-do list for the next recording."""
    counts: dict[str, int] = defaultdict(int)
    missing: list[str] = []
    pages: list[str] = []
    for entry in log:
        counts[entry["tag"]] += 1
        if entry["tag"] == "miss" and entry["url"] not in missing:
            missing.append(entry["url"])
            if entry.get("type") == "document":
                pages.append(entry["url"])
    return {
        "counts": dict(counts),
        "misses": missing,
        "missing_pages": pages,
        "missing_calls": [u for u in missing if u not in pages],
    }
