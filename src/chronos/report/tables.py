"""Per-kernel comparison of baseline, greedy, random and (when measured) the oracle, and summary metrics."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd


def _load(path: Path | None) -> dict | None:
    if path is None or not Path(path).is_file():
        return None
    return json.loads(Path(path).read_text())


def _by_kernel(report: dict | None) -> dict[str, dict]:
    return {k["kernel"]: k for k in (report or {}).get("kernels", []) if "error" not in k}


def search_table(baseline: Path, greedy: Path, random: Path | None = None, oracle: Path | None = None,
                 family: str = "gemm_tile") -> pd.DataFrame:
    """One row per kernel of `family`: baseline cycles (median, IQR) and, per strategy, best cycles, the
    relative change and the action set. Missing strategies (not run, or not on that kernel) are NaN."""
    base = _load(baseline)
    strategies = {"greedy": _by_kernel(_load(greedy)), "random": _by_kernel(_load(random)),
                  "oracle": _by_kernel(_load(oracle))}
    rows = []
    for k in base["kernels"]:
        if k.get("family") != family:
            continue
        row = {"kernel": k["kernel"], "baseline_cycles": k["cycles"]["median"],
               "baseline_cycles_iqr": k["cycles"]["iqr"], "baseline_time_us": 1e3 * k["time_ms"]["median"]}
        for name, res in strategies.items():
            r = res.get(k["kernel"])
            row[f"{name}_cycles"] = r["best"]["cycles"] if r else float("nan")
            row[f"{name}_cycles_iqr"] = r["best"]["cycles_iqr"] if r else float("nan")
            row[f"{name}_change"] = r["change"] if r else float("nan")
            row[f"{name}_actions"] = "+".join(r["best"]["actions"]) if r else ""
            row[f"{name}_sets"] = r["evaluated"] if r else float("nan")
        rows.append(row)
    return pd.DataFrame(rows)


def summary_metrics(table: pd.DataFrame, bc_stats: Path | None, predictions: Path | None,
                    baseline: Path) -> dict:
    """Plain numbers for `dvc exp show` (reports/metrics.json)."""
    out: dict = {}
    for name in ("greedy", "random", "oracle"):
        col = table[f"{name}_change"].dropna()
        out[f"{name}_kernels"] = int(col.size)
        out[f"{name}_mean_change"] = float(col.mean()) if col.size else None
        out[f"{name}_median_change"] = float(col.median()) if col.size else None
    both = table[["greedy_change", "random_change"]].dropna()
    if both.size:
        out["greedy_vs_random_same_kernels"] = {"kernels": len(both),
                                                "greedy_mean": float(both["greedy_change"].mean()),
                                                "random_mean": float(both["random_change"].mean())}
    base = _load(baseline)
    out["baseline_valid"] = sum(k["valid"] for k in base["kernels"])
    out["baseline_kernels"] = len(base["kernels"])
    bc = _load(bc_stats)
    if bc:
        out["bc_train_acc"] = bc.get("best_train_acc")
        out["bc_heldout_acc"] = bc.get("best_heldout_acc")
    pred = _load(predictions)
    if pred:
        seqs = ["+".join(k["predicted"]) for k in pred["kernels"]]
        out["predicted_distinct_sequences"] = len(set(seqs))
        out["predicted_kernels"] = len(seqs)
    return out
