"""Matplotlib (Agg) plots of the gold tables; each function writes one PNG and returns it.

Inputs are small lists of row dicts already aggregated by Spark. Times are epoch ms and are
drawn as seconds since the start of the analysed range.
"""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np

STATUS_COLOURS = {"OK": "#4caf50", "WARN": "#ffc107", "STOP": "#d32f2f", "STALL": "#7b1fa2",
                  "REWIND": "#1976d2", "ERR": "#d32f2f", "NOTFOUND": "#9e9e9e"}
_STATUS_ORDER = ["NOTFOUND", "OK", "WARN", "STOP", "STALL", "REWIND"]


def _save(fig: Any, path: Path) -> Path:
    fig.tight_layout()
    # "tight" grows the canvas to what is drawn: long member ids in tick labels and legends
    # outside the axes are otherwise cut at the figure's edge
    fig.savefig(path, dpi=90, bbox_inches="tight")
    plt.close(fig)
    return path


def lag_heatmaps(pdir: Path, rows: list[dict[str, Any]], rebalances: list[dict[str, Any]],
                 lo: int, hi: int, buckets: int) -> Path | None:
    by_group: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for r in rows:
        by_group[r["group_id"]].append(r)
    if not by_group:
        return None
    width_s = (hi - lo) / 1000.0
    fig, axes = plt.subplots(len(by_group), 1, figsize=(10, 1.6 * len(by_group) + 0.6),
                             squeeze=False)
    for ax, (group, rs) in zip(axes[:, 0], sorted(by_group.items()), strict=True):
        labels = sorted({(r["topic"], r["partition"]) for r in rs})
        grid = np.full((len(labels), buckets + 1), np.nan)
        index = {lab: i for i, lab in enumerate(labels)}
        for r in rs:
            grid[index[(r["topic"], r["partition"])], min(r["bucket"], buckets)] = r["lag"]
        im = ax.imshow(grid, aspect="auto", cmap="magma_r", interpolation="nearest",
                       extent=(0, width_s, len(labels), 0))
        for rb in rebalances:
            if rb["group_id"] == group and rb["end_ts_ms"] is not None:
                ax.axvline((rb["end_ts_ms"] - lo) / 1000.0, color="cyan", lw=1.2)
        ax.set_yticks(np.arange(len(labels)) + 0.5, [f"p{p}" for _t, p in labels], fontsize=7)
        ax.set_title(f"{group}: lag (records) per partition; cyan = rebalance end", fontsize=9)
        fig.colorbar(im, ax=ax, pad=0.01)
    axes[-1, 0].set_xlabel("seconds since start")
    return _save(fig, pdir / "lag_heatmap.png")


def lag_series(pdir: Path, rows: list[dict[str, Any]]) -> Path | None:
    if not rows:
        return None
    fig, (ax1, ax2, ax3) = plt.subplots(3, 1, figsize=(10, 8), sharex=True)
    t0 = min(r["bucket_ms"] for r in rows)
    by_group: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for r in rows:
        by_group[f"{r['group_id']}/{r['topic']}"].append(r)
    for name, rs in sorted(by_group.items()):
        rs.sort(key=lambda r: r["bucket_ms"])
        x = [(r["bucket_ms"] - t0) / 1000.0 for r in rs]
        ax1.plot(x, [r["sum_lag"] for r in rs], label=name)
        ax2.plot(x, [r["max_lag"] for r in rs], label=name)
        ax3.plot(x, [r["max_lag_seconds"] for r in rs], label=name)
    ax1.set_ylabel("sum lag (records)")
    ax2.set_ylabel("max lag (records)")
    ax3.set_ylabel("max lag (s)")
    ax3.set_xlabel("seconds since start")
    ax1.legend(fontsize=6, ncol=3)
    return _save(fig, pdir / "lag_series.png")


def commit_rate(pdir: Path, rows: list[dict[str, Any]]) -> Path | None:
    """Commits per minute, stacked by group and owning member (one panel per group)."""
    if not rows:
        return None
    t0 = min(r["bucket_ms"] for r in rows)
    xs = sorted({r["bucket_ms"] for r in rows})
    groups = sorted({r["group_id"] for r in rows})
    fig, axes = plt.subplots(len(groups), 1, figsize=(10, 1.5 * len(groups) + 0.6),
                             squeeze=False, sharex=True)
    for ax, g in zip(axes[:, 0], groups, strict=True):
        members = sorted({r["member_id"] or "?" for r in rows if r["group_id"] == g})
        counts: dict[tuple[str, int], int] = defaultdict(int)
        for r in rows:
            if r["group_id"] == g:
                counts[(r["member_id"] or "?", r["bucket_ms"])] += r["commits"]
        ax.stackplot([(x - t0) / 1000.0 for x in xs],
                     [[counts[(m, x)] for x in xs] for m in members], labels=members)
        ax.set_title(f"{g}: offset commits per minute by member", fontsize=8)
        # beside the panel: inside it, long member ids cover the stacks
        ax.legend(fontsize=6, loc="upper left", bbox_to_anchor=(1.01, 1.0))
        ax.tick_params(labelsize=7)
    axes[-1, 0].set_xlabel("seconds since start")
    return _save(fig, pdir / "commit_rate.png")


def rebalance_timeline(pdir: Path, rebalances: list[dict[str, Any]], lo: int,
                       hi: int) -> Path | None:
    """One lane per member: rebalance windows shaded, joins/leaves and reconciliations marked."""
    groups = sorted({r["group_id"] for r in rebalances if r["from_epoch"] is not None})
    if not groups:
        return None
    fig, axes = plt.subplots(len(groups), 1, figsize=(10, 1.8 * len(groups) + 0.6), squeeze=False)
    for ax, group in zip(axes[:, 0], groups, strict=True):
        rs = [r for r in rebalances if r["group_id"] == group]
        members = sorted({m for r in rs for m in r["joined"] + r["left"]}
                         | {c["member_id"] for r in rs for c in r["reconciled"]})
        lane = {m: i for i, m in enumerate(members)}
        for r in rs:
            start = r["start_ts_ms"] if r["start_ts_ms"] is not None else r["end_ts_ms"]
            end = r["end_ts_ms"] if r["end_ts_ms"] is not None else hi
            ax.axvspan((start - lo) / 1000, (end - lo) / 1000 + 0.5, color="orange", alpha=0.3)
            for m in r["joined"]:
                ax.plot((start - lo) / 1000, lane[m], "g^")
            for m in r["left"]:
                ax.plot((start - lo) / 1000, lane[m], "rv")
            for c in r["reconciled"]:
                if c["ts_ms"] is not None:
                    ax.hlines(lane[c["member_id"]], (start - lo) / 1000, (c["ts_ms"] - lo) / 1000,
                              color="steelblue", lw=4)
        ax.set_yticks(range(len(members)), members, fontsize=7)
        ax.set_xlim(0, (hi - lo) / 1000)
        ax.set_ylim(-0.5, max(0.5, len(members) - 0.5))
        ax.set_title(f"{group}: rebalances (shaded), join ^, leave v, reconciliation bars",
                     fontsize=9)
    axes[-1, 0].set_xlabel("seconds since start")
    return _save(fig, pdir / "rebalance_timeline.png")


def assignment_balance(pdir: Path, latest: dict[str, dict[str, Any]]) -> Path | None:
    if not latest:
        return None
    names = sorted(latest)
    fig, axes = plt.subplots(len(names), 1, figsize=(8, 1.3 * len(names) + 0.6), squeeze=False)
    for ax, g in zip(axes[:, 0], names, strict=True):
        b = latest[g]
        members = [m["member_id"] for m in b["per_member"]]
        ax.barh(members, [m["partitions"] for m in b["per_member"]], color="steelblue")
        imb = b["imbalance"]
        ax.set_title(f"{g} (generation/epoch {b['epoch_or_generation']}): partitions per member,"
                     f" imbalance {imb:.2f}" if imb is not None else g, fontsize=8)
        ax.tick_params(labelsize=7)
    return _save(fig, pdir / "assignment_balance.png")


def burrow_strip(pdir: Path, rows: list[dict[str, Any]]) -> Path | None:
    if not rows:
        return None
    labels = sorted({(r["group_id"], r["topic"], r["partition"]) for r in rows})
    ticks = sorted({r["eval_ts_ms"] for r in rows})
    grid = np.zeros((len(labels), len(ticks)))
    li = {lab: i for i, lab in enumerate(labels)}
    ti = {t: i for i, t in enumerate(ticks)}
    for r in rows:
        grid[li[(r["group_id"], r["topic"], r["partition"])], ti[r["eval_ts_ms"]]] = \
            _STATUS_ORDER.index(r["status"])
    cmap = matplotlib.colors.ListedColormap([STATUS_COLOURS[s] for s in _STATUS_ORDER])
    fig, ax = plt.subplots(figsize=(10, 0.18 * len(labels) + 1.5))
    ax.imshow(grid, aspect="auto", cmap=cmap, vmin=-0.5, vmax=len(_STATUS_ORDER) - 0.5,
              interpolation="nearest")
    ax.set_yticks(range(len(labels)), [f"{g} p{p}" for g, _t, p in labels], fontsize=6)
    ax.set_xticks(range(len(ticks)), [str((t - ticks[0]) // 1000) for t in ticks], fontsize=6,
                  rotation=90)
    ax.set_xlabel("evaluation time (s since first evaluation)")
    handles = [matplotlib.patches.Patch(color=STATUS_COLOURS[s], label=s) for s in _STATUS_ORDER]
    # above the strip: an offset below it scales with the strip's height and drifts away
    ax.legend(handles=handles, fontsize=6, ncol=6, loc="lower center", bbox_to_anchor=(0.5, 1.0))
    return _save(fig, pdir / "burrow_status.png")
