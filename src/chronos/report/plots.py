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
    strategies = [s for s in ("greedy", "random", "oracle") if table[f"{s}_change"].notna().any()]
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
