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
    drop_path_params: set[str] = field(default_factory=set)  # `;jsessionid=...` in a path
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
        self.drop_path_params |= {n.lower() for n in g.get("drop_path_params") or []}
        if doc.get("source", "hand") == "hand":
            self.keep_params |= set(g.get("keep_params") or [])
        for host, site in (doc.get("sites") or {}).items():
            mine = self.sites.setdefault(host, {"drop_params": set(), "keep_params": set()})
            mine["drop_params"] |= set(site.get("drop_params") or [])
            mine.setdefault("drop_path_params", set())
            mine["drop_path_params"] |= {n.lower() for n in site.get("drop_path_params") or []}
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
        dropped = self.drop_path_params | site.get("drop_path_params", set())
        if ";" in path and dropped:

            def _strip(m: re.Match) -> str:
                if m.group(1).lower() in dropped:
                    fired.append(f"path:drop ;{m.group(1)}")
                    return ""
                return m.group(0)

            path = _PATH_PARAM.sub(_strip, path)
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
        try:
            decision = self._decide(method, clean_url(url)[0], clean_body(body)[0])
        except ValueError as e:  # urlsplit: a host with an unbalanced bracket ('Invalid IPv6 URL')
            decision = Decision("miss", f"not a URL that can be matched: {e}")
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


# Names that are noise wherever they appear: cache busters and session ids.
_NOISE_NAMES = frozenset(
    {
        "_", "cb", "cachebust", "cache_bust", "cachebuster", "nocache", "rnd", "rand",
        "random", "sid", "jsessionid", "phpsessid", "aspsessionid", "sessionid", "session_id",
    }
)  # fmt: skip
# Names that are noise when their values look like it (timestamps, hashes): `v=1.2` may be
# content, `v=1712345678` is not; `t=42` may be a video's offset, `t=1712345678` is a clock.
_NOISY_WHEN_VALUES = frozenset({"v", "ver", "t", "ts", "time", "timestamp", "_t", "nonce", "r"})
_ISO_TIME = re.compile(
    r"^\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:?\d{2})?$", re.I
)
_UUID = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$", re.I)
_TOKEN = re.compile(r"^[A-Za-z0-9_-]{12,}$")
_PATH_PARAM = re.compile(r";([A-Za-z_][\w-]*)=[^/;]*")
_EPOCH_RANGE = (946_684_800, 4_102_444_800)  # 2000 .. 2100


def _value_kind(value: str) -> str | None:
    """What a query value that changes by itself looks like: an epoch time (seconds or ms),
    an ISO timestamp, a random fraction, a UUID, a hash or random token; None: content."""
    v = value
    if v.isdigit() and len(v) in (9, 10, 12, 13):
        n = int(v) / (1000 if len(v) > 10 else 1)
        if _EPOCH_RANGE[0] <= n <= _EPOCH_RANGE[1]:
            return "epoch timestamps"
    if _ISO_TIME.match(v):
        return "ISO timestamps"
    if re.fullmatch(r"0?\.\d{6,}", v):
        return "random numbers"
    if _UUID.match(v):
        return "UUIDs"
    if (
        re.fullmatch(r"[0-9a-f]{8,}", v, re.I)
        and re.search(r"\d", v)
        and re.search(r"[a-f]", v, re.I)
    ):
        return "hex hashes"
    if _TOKEN.match(v) and re.search(r"\d", v) and re.search(r"[A-Za-z]", v):
        return "random tokens"
    return None


def _kind_of_values(values: set[str]) -> str | None:
    kinds = {_value_kind(v) for v in values if v and v != "redacted"}
    return kinds.pop() if len(kinds) == 1 and None not in kinds else None


def suggest_rules(exchanges: Sequence[Exchange]) -> dict:
    """Rules inferred from a recording (`source: inferred`, to be reviewed), each with the
    evidence that suggested it (`evidence`, host -> rule -> why):

    * noise query parameters: a parameter whose value changes across records of URLs that
      are otherwise identical (same host, path and other parameters) while the response
      stays the same, or whose changing values look like noise (epoch or ISO timestamps,
      random numbers, UUIDs, hashes) or whose name is a cache buster or session id; and a
      known cache-buster or session name wherever it appears with such a value;
    * session ids in the path (`;jsessionid=...`);
    * canonical ids (paths that differ but end in the same number and serve the same bytes);
    * beacon endpoints (tiny images, empty 204s)."""
    blocks: set[str] = set()
    sites: dict[str, dict] = defaultdict(
        lambda: {"drop_params": set(), "drop_path_params": set(), "page_identity": []}
    )
    evidence: dict[str, dict[str, str]] = defaultdict(dict)
    # (host, path, the other parameters) -> param -> value -> response digests
    buckets: dict[tuple, dict[str, dict[str, set]]] = defaultdict(
        lambda: defaultdict(lambda: defaultdict(set))
    )
    by_path: dict[tuple[str, str], dict[str, set[str]]] = defaultdict(lambda: defaultdict(set))
    by_digest: dict[str, list[Exchange]] = defaultdict(list)
    seen_values: dict[tuple[str, str], set[str]] = defaultdict(set)
    for ex in exchanges:
        if ex.method.upper() != "GET" or ex.refused:
            continue
        parts = urlsplit(ex.url)
        host = parts.netloc.lower()
        for name in _PATH_PARAM.findall(parts.path):
            if name.lower() in _NOISE_NAMES:
                sites[host]["drop_path_params"].add(name)
                evidence[host][f";{name}"] = "a session id in the path"
        path = _PATH_PARAM.sub("", parts.path)
        params = parse_qsl(parts.query, keep_blank_values=True)
        for i, (k, v) in enumerate(params):
            others = tuple(sorted(params[:i] + params[i + 1 :]))
            buckets[(host, path, others)][k][v].add(ex.digest or ex.url)
            by_path[(host, path)][k].add(v)
            seen_values[(host, k)].add(v)
        if ex.digest:
            by_digest[ex.digest].append(ex)
        tiny_image = ex.content_type.startswith("image/") and ex.length <= 100
        if ex.status == 204 or tiny_image:
            blocks.add("^" + re.escape(path) + "$")
    # Values that change by themselves across loads of one path: noise whatever the rest.
    for (host, path), by_param in by_path.items():
        for name, values in by_param.items():
            if len(values) > 1 and (kind := _kind_of_values(values)):
                sites[host]["drop_params"].add(name)
                evidence[host].setdefault(
                    name, f"{len(values)} values across loads of {path}: {kind}"
                )
    # Otherwise-identical URLs (host, path, every other parameter) that differ in one
    # parameter: noise when the response did not change, or when its name says so.
    for (host, path, _), by_param in buckets.items():
        for name, by_value in by_param.items():
            if len(by_value) < 2 or name in sites[host]["drop_params"]:
                continue
            where = f"{len(by_value)} values across otherwise-identical URLs of {path}"
            if len(set().union(*by_value.values())) == 1:
                why = f"{where}, the same response"
            elif name.lower() in _NOISE_NAMES:
                why = f"{where}: a cache buster or session id by name"
            else:
                continue
            sites[host]["drop_params"].add(name)
            evidence[host][name] = why
    for (host, name), values in seen_values.items():
        if name in sites[host]["drop_params"]:
            continue
        low, kind = name.lower(), _kind_of_values(values)
        if low in _NOISE_NAMES and (kind or "redacted" in values or "sess" in low or "sid" in low):
            sites[host]["drop_params"].add(name)
            evidence[host][name] = "a cache buster or session id by name" + (
                f", its values {kind}" if kind else ""
            )
        elif low in _NOISY_WHEN_VALUES and kind:
            sites[host]["drop_params"].add(name)
            evidence[host][name] = f"a timestamp or version by name, its values {kind}"
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
                evidence[host][f"page /{first}/…{{id}}"] = "one payload at several slugs"
    kept = {
        h: {k: sorted(v) if isinstance(v, set) else v for k, v in site.items() if v}
        for h, site in sorted(sites.items())
        if site["drop_params"] or site["page_identity"] or site["drop_path_params"]
    }
    return {
        "source": "inferred",
        "generic": {"block_paths": sorted(blocks)},
        "sites": kept,
        "evidence": {h: dict(sorted(evidence[h].items())) for h in kept if evidence.get(h)},
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
