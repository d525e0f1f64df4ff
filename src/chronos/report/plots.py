"""Figures for reports/figures/ (matplotlib, headless)."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # no display on CI or the GPU machine
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from chronos.report.tables import tier_name


def _save(fig, ax, out: Path) -> Path:
    ax.legend()
    fig.tight_layout()
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=120)
    plt.close(fig)
    return out


def search_bars(table: pd.DataFrame, out: Path) -> Path:
    """Per-kernel cycle change of greedy, random and oracle against the baseline (lower is faster)."""
    strategies = [s for s in ("greedy", "random", "oracle", "policy") if table[f"{s}_change"].notna().any()]
    x = np.arange(len(table))
    width = 0.8 / max(1, len(strategies))
    fig, ax = plt.subplots(figsize=(max(10, 0.22 * len(table)), 4.5))
    for i, s in enumerate(strategies):
        ax.bar(x + (i - (len(strategies) - 1) / 2) * width, 100 * table[f"{s}_change"], width, label=s)
    ax.axhline(0, color="black", linewidth=0.6)
    ax.set_xticks(x)
    ax.set_xticklabels([k.replace("gemm_tile", "") for k in table["kernel"]], rotation=90, fontsize=7)
    ax.set_ylabel("cycle change vs baseline (%)")
    ax.set_title("gemm_tile on an H200: best variant found per kernel (median of 200 %clock64 samples)")
    return _save(fig, ax, out)


def bc_curves(history: list[dict], out: Path) -> Path:
    """Behaviour-cloning loss and accuracies per epoch."""
    fig, ax = plt.subplots(figsize=(6, 3.5))
    epochs = [h["epoch"] for h in history]
    ax.plot(epochs, [h["train_acc"] for h in history], label="train accuracy")
    if any(h.get("heldout_acc") is not None for h in history):
        ax.plot(epochs, [h.get("heldout_acc") for h in history], label="held-out accuracy")
    ax.plot(epochs, [h["loss"] for h in history], label="loss", linestyle="--")
    ax.set_xlabel("epoch")
    ax.set_title("BC warm start on the greedy demonstrations")
    return _save(fig, ax, out)


def grpo_curves(df: pd.DataFrame, out: Path) -> Path:
    """Greedy-rollout mean cycle change of the policy per GRPO epoch (train and held-out kernels):
    grpo_curves.csv as `chronos.report.tables.read_grpo_curves` returns it."""
    fig, ax = plt.subplots(figsize=(6.5, 3.5))
    for col, label in (("train_mean_change", "train kernels"), ("heldout_mean_change", "held-out kernels")):
        if col in df and df[col].notna().any():
            ax.plot(df["epoch"], 100 * df[col], label=label)
    ax.set_xlabel("epoch (0 = BC warm start)")
    ax.set_ylabel("mean cycle change (%)")
    ax.set_title("DA-GRPO: the policy's greedy rollout per epoch")
    return _save(fig, ax, out)


def heldout_curves(df: pd.DataFrame, out: Path) -> Path:
    """Stage heldout's GRPO per fold and epoch: the greedy choice's mean deploy gain on the training
    families (solid) and on the held-out family (dashed), and the sampling policy's entropy (below)."""
    fig, (ax, ax2) = plt.subplots(2, 1, figsize=(7.5, 6), sharex=True)
    for i, (fold, d) in enumerate(df.groupby("heldout", sort=False)):
        color = f"C{i}"
        ax.plot(d["epoch"], 100 * d["train_gain"], color=color, label=f"held out: {fold}")
        ax.plot(d["epoch"], 100 * d["heldout_gain"], color=color, linestyle="--")
        ax2.plot(d["epoch"], d["entropy"], color=color, label=fold)
    ax.set_ylabel("mean log-gain (%), greedy choice")
    ax.set_title("heldout: GRPO on census rewards (solid: training families, dashed: held-out family)",
                 fontsize=9)
    ax2.set_xlabel("GRPO epoch (0 = after BC)")
    ax2.set_ylabel("policy entropy (nats)")
    return _save(fig, ax, out)


def _policy_point(row: dict) -> tuple[float, float, float] | None:
    """The optimize path's speedup in time (baseline / returned) with its interval; None: unmeasured."""
    if "speedup_time" not in row:
        return None
    lo, hi = row.get("speedup_ci") or (row["speedup_time"], row["speedup_time"])
    return row["speedup_time"], lo, hi


def _greedy_point(row: dict) -> tuple[float, float, float] | None:
    """Greedy's best set as a speedup (1 / its time ratio, the interval inverted); None: failed, not timed."""
    best = row.get("best")
    if not best:
        return None
    if not best.get("actions"):
        return 1.0, 1.0, 1.0
    if not best.get("ratio"):
        return None
    lo, hi = best.get("ci") or (best["ratio"], best["ratio"])
    return 1.0 / best["ratio"], 1.0 / hi, 1.0 / lo


def _tier_panel(ax, family: str, evaluated: list[dict], searched: list[dict]) -> None:
    """One tier: per kernel the policy's and greedy's speedups side by side, intervals as error bars."""
    names = list(dict.fromkeys([r["kernel"] for r in evaluated] + [r["kernel"] for r in searched]))
    series = {"policy (optimize path)": ({r["kernel"]: _policy_point(r) for r in evaluated}, "C0"),
              "greedy in wall time": ({r["kernel"]: _greedy_point(r) for r in searched}, "C1")}
    x = np.arange(len(names))
    width = 0.8 / len(series)
    for i, (label, (points, color)) in enumerate(series.items()):
        pts = np.array([points.get(n) or (np.nan, np.nan, np.nan) for n in names], dtype=float).reshape(-1, 3)
        # Bars rise from 1.0 (no change): up is faster, down slower. A dot marks every measured speedup
        # (1.0 included, where a bar has no height), its interval as the error bar.
        pos = x + (i - (len(series) - 1) / 2) * width
        ax.bar(pos, pts[:, 0] - 1.0, width, bottom=1.0, label=label, color=color)
        ax.errorbar(pos, pts[:, 0], yerr=np.abs(np.stack([pts[:, 0] - pts[:, 1], pts[:, 2] - pts[:, 0]])),
                    fmt="o", markersize=3.5, color=color, markeredgecolor="black", markeredgewidth=0.4,
                    ecolor="black", elinewidth=0.6, capsize=1.5)
    ax.use_sticky_edges = False  # a margin around 1.0, so the dots of kernels left unchanged show whole
    ax.margins(x=0.01, y=0.08)
    ax.axhline(1.0, color="black", linewidth=0.6)
    ax.set_xticks(x)
    ax.set_xticklabels(names, rotation=90, fontsize=6)
    ax.set_ylabel("speedup in wall time (baseline / chosen)")
    ax.set_title(f"{tier_name(family)} tier ({family}): speedup with its bootstrap interval "
                 "(bit-exact variants only; no dot: not measured)", fontsize=9)


def _tier_rows(report: dict | None) -> dict[str, list[dict]]:
    return {f: t.get("kernels", []) for f, t in ((report or {}).get("tiers") or {}).items()}


def triton_bars(evaluate: dict | None, search: dict | None, out: Path) -> Path:
    """One panel per Triton tier: per kernel the policy's wall-time speedup (measure_triton_results.json)
    beside greedy's (triton_search.json), each with its bootstrap interval as error bars."""
    evaluated, searched = _tier_rows(evaluate), _tier_rows(search)
    families = list(dict.fromkeys([*evaluated, *searched]))
    width = max([10.0] + [0.35 * len({r["kernel"] for r in evaluated.get(f, []) + searched.get(f, [])})
                          for f in families])
    fig, axes = plt.subplots(max(1, len(families)), 1, figsize=(width, 5.2 * max(1, len(families))),
                             squeeze=False)
    axes = list(axes[:, 0])
    for ax, family in zip(axes, families, strict=False):
        _tier_panel(ax, family, evaluated.get(family, []), searched.get(family, []))
    fig.suptitle("Triton suite on an H200, zero-shot, in wall time")
    for ax in axes[:-1]:
        ax.legend()
    return _save(fig, axes[-1], out)
