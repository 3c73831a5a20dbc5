"""``report.html``: per-group summary lines, interactive charts and sortable tables.

One self-contained page (style, script and data inline; ``assets``): at the top one
block per group with a line each for health (Burrow status and why), lag (now and its
trend, in records and seconds) and the last rebalance with its cause in words (``story``);
then charts (lag over time in records and seconds, rebalance timeline, assignment over
time, commit rate) that share a time axis, zoom and a group/partition filter; then the
tables. With more groups than fit one page, every group also gets its own page under
``groups/`` and the index links them.
"""

from __future__ import annotations

import hashlib
import html
import json
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from groupcoord.analytics.report import story
from groupcoord.analytics.report.assets import SCRIPT, STYLE

Row = dict[str, Any]


@dataclass(frozen=True)
class GroupView:
    """The three summary lines of one group."""

    group: str
    status: str
    kind: str
    health: str
    lag: str
    last_rebalance: str


@dataclass(frozen=True)
class ChartData:
    """What the charts draw, already aggregated (times in epoch ms)."""

    lo: int
    hi: int
    lag: list[Row] = field(default_factory=list)  # {g, t, p, name, pts: [[ts, rec, sec]]}
    commits: list[Row] = field(default_factory=list)  # {g, name, pts: [[ts, per minute]]}
    rebalances: list[Row] = field(default_factory=list)  # {g, s, e, label, text}
    owners: list[Row] = field(default_factory=list)  # {g, t, p, m, s, e}
    status: list[Row] = field(default_factory=list)  # {g, t, p, st, s, e, why}

    def only(self, group: str) -> ChartData:
        def mine(rows: list[Row]) -> list[Row]:
            return [r for r in rows if r["g"] == group]

        return replace(self, lag=mine(self.lag), commits=mine(self.commits),
                       rebalances=mine(self.rebalances), owners=mine(self.owners),
                       status=mine(self.status))

    def groups(self) -> list[str]:
        return sorted({r["g"] for rows in (self.lag, self.commits, self.rebalances, self.owners)
                       for r in rows})

    def to_json(self) -> str:
        body = json.dumps({"lo": self.lo, "hi": self.hi, "lag": self.lag,
                           "commits": self.commits, "rebalances": self.rebalances,
                           "owners": self.owners, "status": self.status},
                          separators=(",", ":"))
        return body.replace("</", "<\\/")  # never closes the script element


@dataclass(frozen=True)
class Column:
    """A table column: its key in the rows, its header, how a value is shown."""

    key: str
    title: str
    show: Callable[[Any], str] = str
    numeric: bool = False


@dataclass(frozen=True)
class Table:
    title: str
    section: str
    columns: Sequence[Column]
    rows: Sequence[Row]
    note: str = ""


def _pct(v: Any) -> str:
    return f"{v * 100:.0f} %"


def _dec1(v: Any) -> str:
    return f"{v:,.1f}"


N = story.fmt_int
TS = story.fmt_ts
DUR = story.fmt_seconds


def _td(col: Column, value: Any) -> str:
    if value is None or value == []:
        return "<td>-</td>"
    shown = html.escape(col.show(value))
    if col.numeric and isinstance(value, int | float):
        return f"<td class='n' data-v='{value}'>{shown}</td>"
    return f"<td>{shown}</td>"


def table_html(t: Table) -> str:
    head = "".join(f"<th>{html.escape(c.title)}</th>" for c in t.columns)
    body = "".join("<tr>" + "".join(_td(c, r.get(c.key)) for c in t.columns) + "</tr>"
                   for r in t.rows)
    note = f"<p class='meta'>{html.escape(t.note)}</p>" if t.note else ""
    if not t.rows:
        return f"<section id='{t.section}'><h2>{html.escape(t.title)}</h2><p>none</p></section>"
    return (f"<section id='{t.section}'><h2>{html.escape(t.title)}</h2>{note}"
            f"<table class='sortable'><thead><tr>{head}</tr></thead><tbody>{body}</tbody>"
            "</table></section>")


def group_block(v: GroupView, link: str | None = None) -> str:
    name = html.escape(v.group)
    title = f"<a href='{html.escape(link)}'>{name}</a>" if link else name
    lines = (("Health", v.health), ("Lag", v.lag), ("Last rebalance", v.last_rebalance))
    items = "".join(f"<li class='{label.split()[-1].lower()}'><span class='label'>{label}</span> "
                    f"{html.escape(text)}</li>" for label, text in lines)
    return (f"<div class='group s-{html.escape(v.status)}' data-group='{name}'>"
            f"<h3>{title} <span class='badge s-{html.escape(v.status)}'>"
            f"{html.escape(v.status)}</span> <span class='meta kind'>{html.escape(v.kind)} "
            f"group</span></h3><ul>{items}</ul></div>")


CHARTS = (("chart-lag-records", "Lag over time (records per partition)"),
          ("chart-lag-seconds", "Lag over time (seconds behind, per partition)"),
          ("chart-rebalances", "Rebalance timeline"),
          ("chart-status", "Partition status over time (Burrow, then the final verdict)"),
          ("chart-owners", "Assignment over time (colour = owning member)"),
          ("chart-commits", "Commit rate (per member)"))


def charts_html(data: ChartData, group_filter: bool) -> str:
    options = "".join(f"<option value='{html.escape(g)}'>{html.escape(g)}</option>"
                      for g in data.groups())
    gsel = (f"<label>group <select id='f-group'><option value=''>all groups</option>"
            f"{options}</select></label>") if group_filter else ""
    controls = (f"<div class='controls'>{gsel}<label>partition <select id='f-part'></select>"
                "</label><button id='zoom-reset' type='button'>reset zoom</button>"
                "<span id='zoom-range' class='meta'></span> <span class='meta'>drag across a "
                "chart to zoom, wheel to zoom, double-click to reset; hover for values</span>"
                "</div>")
    boxes = "".join(f"<section id='sec-{cid}'><h2>{html.escape(title)}</h2>"
                    f"<div class='chart' id='{cid}'></div></section>" for cid, title in CHARTS)
    return f"<section id='charts'>{controls}{boxes}</section>"


def page(title: str, meta: str, views: Sequence[GroupView], data: ChartData,
         tables: Sequence[Table], images: Sequence[tuple[str, str]] = (),
         links: dict[str, str] | None = None, note: str = "") -> str:
    """The whole page; ``images`` are (title, data URI) pairs of static plots."""
    blocks = "".join(group_block(v, (links or {}).get(v.group)) for v in views)
    imgs = "".join(f"<section id='sec-img-{i}'><h2>{html.escape(t)}</h2>"
                   f"<img alt='{html.escape(t)}' src='{uri}'></section>"
                   for i, (t, uri) in enumerate(images))
    return "\n".join([
        "<!doctype html><html><head><meta charset='utf-8'>",
        f"<title>{html.escape(title)}</title><style>{STYLE}</style></head><body>",
        f"<h1>{html.escape(title)}</h1><p class='meta'>{meta}</p>",
        f"<section id='summary'><h2>Groups</h2>{note}{blocks}</section>",
        charts_html(data, group_filter=len(data.groups()) > 1),
        *[table_html(t) for t in tables],
        imgs,
        f"<script type='application/json' id='report-data'>{data.to_json()}</script>",
        f"<script>{SCRIPT}</script></body></html>"])


def page_name(group: str) -> str:
    """A file name for a group's page (group ids may hold any character)."""
    safe = re.sub(r"[^A-Za-z0-9._-]", "_", group)
    if safe == group:
        return f"groups/{safe}.html"
    return f"groups/{safe}-{hashlib.sha1(group.encode()).hexdigest()[:8]}.html"


def standard_tables(groups: list[Row], rebalances: list[Row], stuck: list[Row],
                    rewinds: list[Row]) -> list[Table]:
    return [
        Table("Group status at the end of the data", "tbl-groups", [
            Column("group", "group"), Column("kind", "kind"), Column("status", "status"),
            Column("partitions", "partitions", N, True),
            Column("total_lag", "lag (records)", N, True),
            Column("max_lag", "worst partition lag", N, True),
            Column("lag_trend", "lag trend (records/s)", _dec1, True)], groups),
        Table("Rebalances", "tbl-rebalances", [
            Column("group_id", "group"), Column("epoch", "generation / epoch"),
            Column("end_ts_ms", "completed (UTC)", TS, True),
            Column("duration_ms", "duration", DUR, True),
            Column("members", "members"), Column("cause", "what happened"),
            Column("partitions_moved", "partitions moved", N, True)], rebalances),
        Table("Stuck and slow consumers", "tbl-stuck", [
            Column("group_id", "group"), Column("topic", "topic"),
            Column("partition", "partition", N, True), Column("status", "status"),
            Column("why", "why"), Column("member_id", "member", story.short_member),
            Column("current_lag", "lag", N, True)], stuck),
        Table("Rewinds", "tbl-rewinds", [
            Column("group_id", "group"), Column("topic", "topic"),
            Column("partition", "partition", N, True), Column("ts_ms", "at (UTC)", TS, True),
            Column("from_offset", "from", N, True), Column("to_offset", "to", N, True),
            Column("rewound_by", "rewound by", N, True),
            Column("recovered_ts_ms", "back at the old offset (UTC)", TS, True)], rewinds),
    ]


def rebalance_rows(rebalances: list[Row], timeouts: dict[tuple[str, str], int]) -> list[Row]:
    """Rebalances as the table shows them (newest first)."""
    out = []
    for r in sorted(rebalances, key=lambda r: -(r.get("end_ts_ms") or r.get("start_ts_ms") or 0)):
        out.append({**r, "epoch": story.epoch_label(r),
                    "members": f"{r['members_before']} -> {r['members_after']}",
                    "cause": story.rebalance_sentence(r, timeouts)})
    return out


def write(out: Path, title: str, meta: str, views: list[GroupView], data: ChartData,
          tables: list[Table], images: list[tuple[str, str]], max_groups: int,
          max_pages: int) -> list[Path]:
    """``report.html`` (and ``groups/*.html`` past ``max_groups`` groups); returns the pages."""
    many = len(views) > max_groups
    paged = views[:max_pages] if many else []
    links = {v.group: page_name(v.group) for v in paged}
    shown = {v.group for v in views[:max_groups]}
    index_data = replace(data, lag=[r for r in data.lag if r["g"] in shown],
                         commits=[r for r in data.commits if r["g"] in shown],
                         rebalances=[r for r in data.rebalances if r["g"] in shown],
                         owners=[r for r in data.owners if r["g"] in shown],
                         status=[r for r in data.status if r["g"] in shown])
    note = (f"<p class='meta'>{len(views):,} groups: the charts show the {len(shown)} worst; "
            "each group links to its own page.</p>") if many else ""
    (out / "report.html").write_text(page(title, meta, views, index_data, tables, images,
                                          links, note), encoding="utf-8")
    pages = [out / "report.html"]
    for v in paged:
        path = out / links[v.group]
        path.parent.mkdir(parents=True, exist_ok=True)
        mine = [replace(t, rows=[r for r in t.rows
                                 if (r.get("group_id") or r.get("group")) == v.group])
                for t in tables]
        path.write_text(page(f"{title}: {v.group}", meta + " <a href='../report.html'>all "
                             "groups</a>", [v], data.only(v.group), mine), encoding="utf-8")
        pages.append(path)
    return pages
