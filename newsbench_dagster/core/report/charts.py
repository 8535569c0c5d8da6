"""The report's charts as Vega-Lite specs (built with altair), rendered offline by
vl-convert: SVG for the HTML report, PNG for the Dagster UI's Markdown metadata. No chart is
drawn by hand and nothing is fetched: vl-convert bundles Vega itself.

Every function takes rows as `tables.records` gives them and returns an altair chart, or None
when there is nothing to plot (a plot of nothing is not shown at all)."""

from __future__ import annotations

import base64
from collections import Counter
from collections.abc import Iterable
from typing import TYPE_CHECKING

import pandas as pd

from newsbench_dagster.core.scoring.failures import SUCCESS, kind_of

if TYPE_CHECKING:  # altair is imported by the functions that draw (definitions load faster)
    import altair as alt

ALL = "*"
WIDTH = 520


def success_over_days(kpi_rows: Iterable[dict], site: str = ALL) -> alt.Chart | None:
    """Daily success rate per agent version for a site (default: all sites), each with its
    95 % Wilson interval as a band."""
    import altair as alt

    rows = [
        {
            "day": pd.Timestamp(r["day"]).strftime("%Y-%m-%d"),
            "agent": r["agent_version"],
            "success": r["success_rate"],
            "low": r["success_ci_low"],
            "high": r["success_ci_high"],
            "scored": r["n_scored"],
        }
        for r in kpi_rows
        if r["site"] == site and r["slice_kind"] == "all" and r.get("success_rate") is not None
    ]
    if not rows:
        return None
    df = pd.DataFrame(rows)
    base = alt.Chart(df).encode(
        x=alt.X("day:T", title="day", axis=alt.Axis(format="%b %d", tickCount="day")),
        color=alt.Color("agent:N", legend=alt.Legend(orient="bottom", title=None)),
    )
    band = base.mark_area(opacity=0.2).encode(
        y=alt.Y("low:Q", title="success rate (95 % CI)", scale=alt.Scale(domain=[0, 1])),
        y2="high:Q",
    )
    line = base.mark_line(point=True).encode(
        y="success:Q",
        tooltip=["day:T", "agent:N", "success:Q", "low:Q", "high:Q", "scored:Q"],
    )
    title = "Success over days" + ("" if site == ALL else f": {site}")
    return (band + line).properties(width=WIDTH, height=220, title=title)


def success_by_site(kpi_rows: Iterable[dict]) -> alt.Chart | None:
    """The day's success rate per site and agent version, with 95 % intervals."""
    import altair as alt

    rows = [
        {
            "site": "all sites" if r["site"] == ALL else r["site"],
            "agent": r["agent_version"],
            "success": r["success_rate"],
            "low": r["success_ci_low"],
            "high": r["success_ci_high"],
        }
        for r in kpi_rows
        if r["slice_kind"] == "all" and r.get("success_rate") is not None
    ]
    if not rows:
        return None
    base = alt.Chart(pd.DataFrame(rows)).encode(
        y=alt.Y("site:N", title=None), yOffset="agent:N", color=alt.Color("agent:N", title=None)
    )
    scale = alt.Scale(domain=[0, 1])
    points = base.mark_point(filled=True, size=60).encode(
        x=alt.X("success:Q", title="success rate (95 % CI)", scale=scale),
        tooltip=["site:N", "agent:N", "success:Q", "low:Q", "high:Q"],
    )
    bars = base.mark_rule().encode(x="low:Q", x2="high:Q")
    return (bars + points).properties(width=WIDTH, title="Success by site")


def failure_taxonomy(score_rows: Iterable[dict], by: str = "site") -> alt.Chart | None:
    """Runs per site (or intent) by outcome class, agent failures apart from the
    environment's: one bar per site, one facet per whose-fault kind."""
    import altair as alt

    counts = Counter((r.get(by) or "?", r.get("failure_class") or "?") for r in score_rows)
    rows = [
        {by: key, "class": cls, "kind": kind_of(cls), "runs": n}
        for (key, cls), n in counts.items()
        if cls != SUCCESS
    ]
    if not rows:
        return None
    return (
        alt.Chart(pd.DataFrame(rows))
        .mark_bar()
        .encode(
            x=alt.X("runs:Q", title="runs"),
            y=alt.Y(f"{by}:N", title=None),
            color=alt.Color("class:N", title="failure class"),
            row=alt.Row("kind:N", title=None),
            tooltip=[f"{by}:N", "class:N", "kind:N", "runs:Q"],
        )
        .properties(width=WIDTH - 120, title=f"Failures by {by} (successes left out)")
    )


def drift_timeline(drift_rows: Iterable[dict]) -> alt.Chart | None:
    """Per site and day: a template change, a feed-volume anomaly or a drifted baseline."""
    import altair as alt

    rows = []
    for r in drift_rows:
        what = (
            "drifted (excluded from gating)"
            if r.get("drifted")
            else "template changed"
            if r.get("template_changed")
            else "volume anomaly"
            if r.get("volume_anomaly")
            else "steady"
        )
        rows.append(
            {
                "day": pd.Timestamp(r["day"]).strftime("%Y-%m-%d"),
                "site": r["site"],
                "state": what,
                "feed_z": r.get("feed_z"),
                "reasons": "; ".join(str(x) for x in r.get("reasons") or []) or "-",
            }
        )
    if not rows:
        return None
    colors = alt.Scale(
        domain=["steady", "volume anomaly", "template changed", "drifted (excluded from gating)"],
        range=["#9bbf85", "#e0b341", "#e07b39", "#c0392b"],
    )
    return (
        alt.Chart(pd.DataFrame(rows))
        .mark_square(size=140)
        .encode(
            x=alt.X("day:T", title="day", axis=alt.Axis(format="%b %d", tickCount="day")),
            y=alt.Y("site:N", title=None),
            color=alt.Color("state:N", scale=colors, legend=alt.Legend(orient="bottom")),
            tooltip=["day:T", "site:N", "state:N", "feed_z:Q", "reasons:N"],
        )
        .properties(width=WIDTH, title="Drift timeline")
    )


def svg(chart: alt.Chart) -> str:
    """The chart as an SVG document (rendered offline)."""
    import vl_convert

    return vl_convert.vegalite_to_svg(chart.to_dict())


def png(chart: alt.Chart, scale: float = 1.0) -> bytes:
    import vl_convert

    return vl_convert.vegalite_to_png(chart.to_dict(), scale=scale)


def markdown_image(chart: alt.Chart | None, alt_text: str) -> str:
    """Markdown the Dagster UI renders as the chart (a PNG inlined as a data URI)."""
    if chart is None:
        return f"_{alt_text}: nothing to plot_"
    data = base64.b64encode(png(chart)).decode()
    return f"![{alt_text}](data:image/png;base64,{data})"
