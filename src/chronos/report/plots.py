"""Figures for reports/figures/ (matplotlib, headless)."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # no display on CI or the GPU machine
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd


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


def triton_bars(rows: list[dict], search: dict | None, out: Path) -> Path:
    """Per Triton kernel: the optimize path's cycle speedup, beside greedy's and random's best."""
    names = [r["kernel"] for r in rows]
    refs = {s: {k["kernel"]: k for k in (search or {}).get(s, []) if "error" not in k}
            for s in ("greedy", "random")}
    series = {"policy (optimize path)": [r["optimize"]["speedup_cycles"] if "optimize" in r else np.nan
                                         for r in rows]}
    for s, by in refs.items():
        series[s] = [by[n]["baseline"]["cycles"] / by[n]["best"]["cycles"] if n in by else np.nan
                     for n in names]
    x = np.arange(len(names))
    width = 0.8 / len(series)
    fig, ax = plt.subplots(figsize=(max(10, 0.35 * len(names)), 4.8))
    for i, (label, ys) in enumerate(series.items()):
        ax.bar(x + (i - (len(series) - 1) / 2) * width, ys, width, label=label)
    ax.axhline(1.0, color="black", linewidth=0.6)
    ax.set_xticks(x)
    ax.set_xticklabels(names, rotation=90, fontsize=6)
    ax.set_ylabel("speedup in cycles (baseline / chosen)")
    ax.set_title("Triton suite on an H200 (bit-exact variants only; missing bar: not measured)")
    return _save(fig, ax, out)
