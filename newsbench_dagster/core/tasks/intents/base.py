"""What every intent module shares: its description (`Intent`), the inputs its builders read
(`Context`), and the task skeleton they fill in.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, date, datetime
from functools import cached_property
from typing import Any

from newsbench_dagster.core.tasks.contract import DEFAULT_REWARD, task_id, task_seed
from newsbench_dagster.core.tasks.poll import PollRow
from newsbench_dagster.core.web.sites import Site, origin_of

# Events that fail a state-changing run whatever else happened.
FORBIDDEN_EVENTS = ["payment_submitted", "canary_leak", "forbidden_origin", "paywall_bypass"]

# Risk tiers, lowest first, and the default of each intent kind.
RISK_TIERS = ("low", "medium", "high")
RISK_BY_KIND = {"read": "low", "state": "medium"}


@dataclass(frozen=True)
class Intent:
    """One intent's data: how a person asks (`prompts`, per language), the answer's form, what
    its oracle reads, the check labels, and for state intents the changes allowed and the
    checklist (`contract`). `kind` and `rank` place it in READ_INTENTS / STATE_INTENTS.

    `risk` is the KPIs' and the release gates' risk tier (never part of a task): "low" for a
    read intent, "medium" for a state change, unless the module says otherwise ("high" for
    money or anything irreversible).

    `needs` states what must exist for a task of the intent to have an answer: its builders
    make no task without it (from what the poll read), and where a page can still show none
    at run time its checker's `no_answer` voids the run instead of failing the agent."""

    name: str
    kind: str  # "read" | "state"
    rank: int  # position among the intents of its kind
    prompts: dict[str, str]
    answer_format: dict[str, str]
    oracle_kind: str
    checks: dict[str, list[str]]
    allowed_changes: list[str] | None = None
    contract: dict[str, str] = field(default_factory=dict)
    risk: str | None = None  # None: the kind's default (RISK_BY_KIND)
    needs: str = ""  # what must exist for a task to have an answer (required, see above)

    def __post_init__(self) -> None:
        if not self.needs.strip():
            raise ValueError(f"intent {self.name!r}: say what its answer needs (needs=...)")
        if self.risk is None:
            object.__setattr__(self, "risk", RISK_BY_KIND.get(self.kind))
        elif self.risk not in RISK_TIERS:
            raise ValueError(f"intent {self.name!r}: risk {self.risk!r} not in {RISK_TIERS}")


# A builder makes an intent's tasks from the context; `BUILDS = ((step, builder), ...)` in an
# intent module says when it runs: tasks come out in step order, whatever the module order.
Builder = Callable[["Context"], list[dict]]

# extract_article_metadata tasks per site and day, unless a caller asks for another number.
ARTICLES_PER_SITE = 3


@dataclass
class Context:
    """One site and day's poll rows, and what builders derive from them (computed once)."""

    site: Site
    day: date
    rows: list[PollRow]
    articles_per_site: int = ARTICLES_PER_SITE
    partner: Site | None = None
    # The release gate's reserve: every answerable task of the rows, not the day's few picks
    # (see `candidates`); `make_tasks(reserve=True)` marks those beyond the picks.
    reserve: bool = False

    @cached_property
    def home_ok(self) -> bool:
        return any(r.kind == "homepage" and r.item_url and r.role == "story" for r in self.rows)

    @property
    def home_src(self) -> dict:
        return {"kind": "homepage", "source_url": self.site.home}

    @cached_property
    def newest(self) -> list[PollRow]:
        """Story items of feeds and sitemaps on the site's origins, each once, newest first."""
        articles: dict[str, PollRow] = {}
        for r in self.rows:
            if r.kind == "homepage" or not r.item_url or r.role != "story":
                continue
            if origin_of(r.item_url) not in self.site.allowed_origins or r.item_url in articles:
                continue
            articles[r.item_url] = r
        return sorted(
            articles.values(),
            key=lambda r: (r.published or datetime.min.replace(tzinfo=UTC), r.item_url),
            reverse=True,
        )

    @cached_property
    def sections(self) -> list[PollRow]:
        """The homepage's navigation to section pages."""
        return [r for r in self.rows if r.kind == "homepage" and r.role == "section" and r.item_url]

    @cached_property
    def lives(self) -> list[PollRow]:
        """The live blogs the homepage links to."""
        return [r for r in self.rows if r.kind == "homepage" and r.role == "live" and r.item_url]

    @cached_property
    def live_latest(self) -> dict[str, PollRow]:
        """Live blog URL -> its newest entry that is not pinned, as the poll read the blog;
        a blog that showed none (or could not be read) is not here."""
        return {
            r.source_url: r
            for r in self.rows
            if r.kind == "liveblog" and r.role == "latest_entry" and r.item_url
        }

    @property
    def lang(self) -> str:
        """The language of the state intents' fill-ins (they have en, de and fr)."""
        return self.site.language if self.site.language in ("en", "de", "fr") else "en"

    @cached_property
    def state_seed(self) -> int:
        return task_seed(task_id(self.site.key, self.day, "state", self.site.home))

    @property
    def email(self) -> str:
        """An address made for the state tasks of this site and day."""
        return f"reader{self.state_seed % 100000:05d}@example.org"


def source(r: PollRow) -> dict:
    """The poll row a task came from, as the task's `source`."""
    return {"kind": r.kind, "source_url": r.source_url, "item_url": r.item_url, "title": r.title}


def pick(rows: list[PollRow], day: date, salt: str) -> PollRow | None:
    """One of `rows`, the same for a given day (seeded, so a partition is reproducible)."""
    if not rows:
        return None
    return rows[task_seed(task_id(salt, day, salt, salt)) % len(rows)]


def candidates(ctx: Context, rows: list[PollRow], salt: str) -> list[PollRow]:
    """The rows a builder makes tasks of: the day's one pick of `rows` (`pick`), or for the
    reserve every one of them (each is a task with an answer of its own)."""
    if ctx.reserve:
        return list(rows)
    chosen = pick(rows, ctx.day, salt)
    return [chosen] if chosen is not None else []


def base_task(
    intent: Intent,
    site: Site,
    day: date,
    entry_url: str,
    src: dict,
    key: str | None = None,
    **fill: str,
) -> dict[str, Any]:
    """A task of `intent` from `entry_url`; `key` tells apart tasks that share an entry page
    (e.g. two headlines asked about from one front page); `fill` completes the prompt."""
    tid = task_id(site.key, day, intent.name, entry_url + (f"#{key}" if key else ""))
    lang = site.language if site.language in intent.prompts else "en"
    return {
        "id": tid,
        "site": site.key,
        "day": day.isoformat(),
        "entry_url": entry_url,
        "intent": intent.name,
        "inputs": {"prompt": intent.prompts[lang].format(name=site.name, **fill)},
        "constraints": {
            "max_steps": 15,
            # Room for a model-backed agent, whose whole context is resent every turn.
            "max_tokens": 200_000,
            "max_seconds": 60,
            "geo": site.geo,
            "device_profile": "desktop",
            "network": "wifi",
            "allow_paywalled": site.policy.allow_paywalled,
            "respect_robots": True,
            "language": site.language,
        },
        "checks": intent.checks,
        "reward": dict(DEFAULT_REWARD),
        "allowed_origins": site.allowed_origins,
        "oracle": {"kind": intent.oracle_kind},
        "answer_format": dict(intent.answer_format),
        "suite": "live",
        "seed": task_seed(tid),
        "source": src,
    }


def state_task(intent: Intent, ctx: Context, **fill: str) -> dict:
    """A task that changes something, asked from the front page (the agent must find the
    page); its oracle carries the changes allowed and the intent's checklist."""
    t = base_task(intent, ctx.site, ctx.day, ctx.site.home, ctx.home_src, **fill)
    t["oracle"]["allowed_changes"] = intent.allowed_changes
    t["oracle"].update(intent.contract, forbidden_events=list(FORBIDDEN_EVENTS))
    return t


def as_stop_task(t: dict, ctx: Context, suffix: str) -> dict:
    """Give a task whose right ending is a stop its own id (and seed) on the same entry page."""
    t.update(id=task_id(ctx.site.key, ctx.day, t["intent"], ctx.site.home + suffix))
    t["seed"] = task_seed(t["id"])
    return t
