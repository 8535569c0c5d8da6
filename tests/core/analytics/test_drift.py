"""The drift gate's logic: template fingerprints read from the real newsroom with its clock
frozen (stable while headlines rotate, changed by a redesign), the feed-volume z-score, the
day's assessment and what the release gate gets from it."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime

import pytest

from newsbench_dagster.core.analytics.drift import (
    assess,
    drifted_sites,
    from_history,
    gating_of,
    history_entry,
    mark_tasks,
    template_fingerprint,
    template_skeleton,
    volume_anomaly,
)
from newsbench_dagster.core.tasks.contract import validation_errors
from newsbench_dagster.core.tasks.poll import poll_site
from newsbench_dagster.core.tasks.produce import make_tasks
from newsbench_dagster.core.web.network import Fetcher, Routing
from newsbench_dagster.newsroom.clock import FixedClock
from newsbench_dagster.newsroom.server import NewsroomServer
from newsbench_dagster.newsroom.world import Newsroom
from tests.support.tasks import LEAD_AND_METADATA


def at(day: int, hour: int) -> datetime:
    return datetime(2026, 11, day, hour, 0, tzinfo=UTC)


@pytest.fixture(scope="module")
def frozen() -> Iterator[tuple[NewsroomServer, FixedClock]]:
    clock = FixedClock(at(10, 12))
    with NewsroomServer(Newsroom(seed=7), clock=clock) as server:
        yield server, clock


@pytest.fixture(scope="module")
def front(frozen, registry):
    """front(site, when) -> the site's front page HTML served at `when`."""
    server, clock = frozen
    fetcher = Fetcher(Routing.via_proxy(server.address), registry.allowed_origins)

    def load(site: str, when: datetime) -> bytes:
        clock.set(when)
        res = fetcher.fetch(registry.get(site).home)
        assert res.ok, res.error
        return res.content

    yield load
    fetcher.close()


# --- template fingerprint ---------------------------------------------------------------------


def test_harbor_fingerprint_is_stable_without_a_redesign_and_changes_with_it(front):
    before = front("harbor", at(10, 12))
    later = front("harbor", at(12, 18))
    assert before != later  # other headlines, links and times...
    assert template_fingerprint(before) == template_fingerprint(later)  # ...same template
    # Harbor redesigns (template v2) on 2026-11-16.
    assert template_fingerprint(front("harbor", at(15, 12))) == template_fingerprint(before)
    redesigned = template_fingerprint(front("harbor", at(17, 12)))
    assert redesigned != template_fingerprint(before)
    assert "lead-story" in template_skeleton(before)
    assert "c-hero" in template_skeleton(front("harbor", at(17, 12)))


@pytest.mark.parametrize("site", ["harbor", "rhein", "lac", "northgate", "isar", "fleuve"])
def test_every_site_has_one_fingerprint_through_a_day(front, site):
    # Across the day the lead rotates, the live blog moves on and, on the adversarial sites,
    # a sponsored promo comes and goes: none of it is the template.
    pages = [front(site, at(21, h)) for h in (1, 6, 9, 13, 17, 22)]
    assert len(set(pages)) > 1
    assert len({template_fingerprint(p) for p in pages}) == 1


def test_fingerprint_ignores_content_counts_and_volatile_slots():
    card = '<article class="card card-{n}"><h2><a href="/s/{n}">Story {n}</a></h2></article>'
    page = (
        '<html><body><main id="content">{promo}<section class="list">{cards}</section></main>'
        "<footer><p>(c) 2026</p></footer></body></html>"
    )

    def html(n: int, promo: str = "") -> str:
        return page.format(cards="".join(card.format(n=i) for i in range(n)), promo=promo)

    base = template_fingerprint(html(3))
    assert template_fingerprint(html(12)) == base
    assert template_fingerprint(html(5, '<div class="ad-slot"><p>Buy</p></div>')) == base
    assert template_fingerprint(html(5, '<div role="dialog"><p>Cookies?</p></div>')) == base
    assert template_fingerprint(html(3).replace('class="list"', 'class="list-v2"')) != base
    wrapped = html(3).replace("<h2>", "<div><h2>").replace("</h2>", "</h2></div>")
    assert template_fingerprint(wrapped) != base
    assert template_fingerprint("") == "" and template_skeleton("   ") == ""


# --- feed volume ------------------------------------------------------------------------------


def test_volume_anomaly_on_a_regular_feed():
    mean, std, z, anomalous = volume_anomaly(0, [20, 21, 19, 20, 20])
    assert mean == 20 and std == pytest.approx(2.0)  # floored at 10 % of the mean
    assert z == pytest.approx(-10) and anomalous
    assert volume_anomaly(22, [20, 21, 19, 20, 20])[3] is False
    assert volume_anomaly(60, [20, 21, 19, 20, 20])[3] is True  # a flood is an anomaly too


def test_volume_anomaly_on_small_counts_and_short_history():
    # Two or three items a day: one more or less is noise (std floored at 1).
    mean, std, z, anomalous = volume_anomaly(4, [2, 2, 2, 2])
    assert (mean, std, z, anomalous) == (2, 1.0, 2.0, False)
    assert volume_anomaly(6, [2, 2, 2, 2])[3] is True
    # Too little history: reported, never anomalous.
    assert volume_anomaly(0, [20, 20]) == (20, 2.0, None, False)
    assert volume_anomaly(0, []) == (None, None, None, False)
    assert volume_anomaly(0, [20, 20], min_history=2)[3] is True


# --- assessment -------------------------------------------------------------------------------


def day_row(previous=None, **kw):
    args = {
        "site": "harbor",
        "day": "2026-11-16",
        "fingerprint": "b" * 16,
        "previous_fingerprint": "a" * 16,
        "feed_items": 20,
        "feed_history": [20, 20, 21, 19],
        "baseline_version": "reference@0.1.0+abcd1234",
        "baseline_success": 0.5,
        "baseline_previous_success": 0.95,
    }
    return assess(**{**args, **kw}, previous=previous)


def test_template_change_with_a_drop_is_drifted():
    row = day_row()
    assert row["template_changed"] and row["drifted"]
    assert row["baseline_delta"] == pytest.approx(-0.45)
    assert row["pre_change_success"] == 0.95
    text = " ".join(row["reasons"])
    assert "harbor" in text and "template changed" in text
    assert "95%" in text and "50%" in text and "-45 pp" in text


def test_template_change_without_a_drop_is_flagged_not_drifted():
    row = day_row(baseline_success=0.9)
    assert row["template_changed"] and not row["drifted"]
    assert row["pre_change_success"] is None
    assert any("flagged, not excluded" in r for r in row["reasons"])
    # A drop with no change on the site is the agent's own regression, not drift.
    quiet = day_row(fingerprint="a" * 16)
    assert not quiet["template_changed"] and not quiet["drifted"] and quiet["reasons"] == []
    # A first day has nothing to compare with.
    first = day_row(previous_fingerprint=None, baseline_previous_success=None, feed_history=[])
    assert not first["template_changed"] and not first["drifted"]


def test_volume_anomaly_with_a_drop_is_drifted():
    row = day_row(fingerprint="a" * 16, feed_items=0)
    assert row["volume_anomaly"] and row["feed_z"] < -3 and row["drifted"]
    assert any("0 feed items" in r for r in row["reasons"])


def test_drift_lasts_until_the_baseline_recovers():
    day1 = day_row()
    # Next day: no further change, the baseline climbs but is still 15 pp under 95 %.
    day2 = day_row(
        previous=day1,
        day="2026-11-17",
        previous_fingerprint="b" * 16,
        baseline_success=0.8,
        baseline_previous_success=0.5,
    )
    assert day2["drifted"] and not day2["template_changed"]
    assert day2["pre_change_success"] == 0.95
    assert any("still drifted" in r and "95%" in r for r in day2["reasons"])
    # Then back within 10 pp of the pre-change level: gated again.
    day3 = day_row(
        previous=history_entry(day2),  # what the asset keeps between days
        day="2026-11-18",
        previous_fingerprint="b" * 16,
        baseline_success=0.9,
        baseline_previous_success=0.8,
    )
    assert not day3["drifted"] and day3["pre_change_success"] is None
    assert any("recovered" in r for r in day3["reasons"])


def test_history_only_looks_back():
    history = {
        "2026-11-14": {"fingerprint": "a", "feed_items": 20, "baseline_version": "v1",
                       "baseline_success": 1.0, "drifted": False},
        "2026-11-15": {"fingerprint": "a", "feed_items": 21, "baseline_version": "v2",
                       "baseline_success": 0.7, "drifted": False},
        "2026-11-16": {"fingerprint": "b", "feed_items": 3, "baseline_version": "v1",
                       "baseline_success": 0.2, "drifted": True},
    }  # fmt: skip
    earlier = from_history(history, "2026-11-16", "v1")
    assert earlier["previous_fingerprint"] == "a"
    assert earlier["feed_history"] == [20, 21]
    assert earlier["baseline_previous_success"] == 1.0  # the same baseline version only
    assert earlier["previous"]["baseline_version"] == "v2"
    assert from_history({}, "2026-11-16", "v1")["previous"] is None


# --- what the release gate reads ---------------------------------------------------------------


def test_drifted_sites_reads_each_sites_latest_row():
    rows = [
        {"site": "harbor", "day": "2026-11-16", "drifted": True, "reasons": '["harbor: fell"]'},
        {"site": "harbor", "day": "2026-11-15", "drifted": False, "reasons": "[]"},
        {"site": "rhein", "day": "2026-11-15", "drifted": True, "reasons": ["rhein: fell"]},
        {"site": "rhein", "day": "2026-11-17", "drifted": False, "reasons": ["rhein: back"]},
        {"site": "lac", "day": datetime(2026, 11, 16, tzinfo=UTC), "drifted": None},
    ]
    assert drifted_sites(rows) == {"harbor": ["harbor: fell"]}


def test_mark_tasks_excludes_drifted_sites_and_keeps_tasks_valid(newsroom_server, registry):
    day = datetime(2026, 11, 16, tzinfo=UTC).date()
    with Fetcher(Routing.via_proxy(newsroom_server.address), registry.allowed_origins) as f:
        harbor, lac = (
            make_tasks(
                registry.get(s),
                day,
                poll_site(registry.get(s), f, None, day),
                intents=LEAD_AND_METADATA,
            )
            for s in ("harbor", "lac")
        )
    reasons = ["harbor: the baseline fell from 95% to 50% on the day of the template change."]
    marked = mark_tasks(harbor + lac, {"harbor": reasons})
    assert len(marked) == len(harbor) + len(lac)
    for task in marked:
        assert validation_errors(task) == [], task["id"]
        gating = gating_of(task)
        if task["site"] == "harbor":
            assert "drift:2026-11-16" in task["source"]["tags"]
            assert gating == {"accuracy": "excluded", "safety": "gated", "reason": reasons[0]}
        else:
            assert gating == {"accuracy": "gated", "safety": "gated"}
    assert all("tags" not in (t.get("source") or {}) for t in harbor)  # inputs untouched
    again = mark_tasks(marked, {"harbor": reasons}, day="2026-11-17")
    assert again[0]["source"]["tags"] == ["drift:2026-11-16", "drift:2026-11-17"]
