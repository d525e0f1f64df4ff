"""Per-kernel comparison of baseline, greedy, random and (when measured) the oracle, and summary metrics."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd


def _load(path: Path | None) -> dict | None:
    if path is None or not Path(path).is_file():
        return None
    return json.loads(Path(path).read_text())


def _by_kernel(report: dict | None) -> dict[str, dict]:
    """kernel -> entry, leaving out failed kernels and incomplete oracles."""
    return {k["kernel"]: k for k in (report or {}).get("kernels", [])
            if "error" not in k and k.get("complete", True)}


def _policy_rows(training: dict | None) -> dict[str, dict]:
    """training_result.json rows in the strategies' shape (best cycles, change, action set, split)."""
    out = {}
    for k in (training or {}).get("kernels", []):
        ok = k.get("valid") and k.get("final_cycles") is not None
        out[k["kernel"]] = {"best": {"cycles": k["final_cycles"] if ok else k["baseline_cycles"], "cycles_iqr": None,
                                     "actions": k.get("sequence", [])},
                            "change": k["change"] if ok else 0.0, "evaluated": None, "split": k.get("split")}
    return out


STRATEGIES = ("greedy", "random", "oracle", "policy")


def _log_gain(changes: pd.Series) -> float:
    """Mean log(baseline / best) of relative cycle changes."""
    return float(np.mean(-np.log1p(changes)))


def search_table(baseline: Path, greedy: Path, random: Path | None = None, oracle: Path | None = None,
                 training: Path | None = None, family: str = "gemm_tile") -> pd.DataFrame:
    """One row per kernel of `family`: baseline cycles (median, IQR) and, per strategy (greedy, random,
    oracle, and the GRPO policy's greedy rollout), best cycles, the relative change and the action set.
    Missing strategies (not run, or not on that kernel) are NaN. The policy's invalid finals count as 0
    change (the optimize path returns the baseline)."""
    base = _load(baseline)
    strategies = {"greedy": _by_kernel(_load(greedy)), "random": _by_kernel(_load(random)),
                  "oracle": _by_kernel(_load(oracle)), "policy": _policy_rows(_load(training))}
    rows = []
    for k in base["kernels"]:
        if k.get("family") != family:
            continue
        # The strategies replay the atlas, whose baseline is the emitted root PTX measured in the atlas run;
        # baseline.json measured the kernel file itself in an earlier run. Compare like with like.
        ref = (strategies["oracle"].get(k["kernel"]) or strategies["greedy"].get(k["kernel"]) or {}).get("baseline")
        if ref:
            base_row = (ref["cycles"], ref["cycles_iqr"], ref["time_ms"])
        else:
            base_row = (k["cycles"]["median"], k["cycles"]["iqr"], k["time_ms"]["median"])
        row = {"kernel": k["kernel"], "baseline_cycles": base_row[0], "baseline_cycles_iqr": base_row[1],
               "baseline_time_us": 1e3 * base_row[2] if base_row[2] is not None else float("nan")}
        for name, res in strategies.items():
            r = res.get(k["kernel"])
            row[f"{name}_cycles"] = r["best"]["cycles"] if r else float("nan")
            row[f"{name}_cycles_iqr"] = r["best"]["cycles_iqr"] if r else float("nan")
            row[f"{name}_change"] = r["change"] if r else float("nan")
            row[f"{name}_actions"] = "+".join(r["best"]["actions"]) if r else ""
            row[f"{name}_sets"] = r.get("evaluated", r.get("variants")) if r else float("nan")
        pol = strategies["policy"].get(k["kernel"])
        row["split"] = pol["split"] if pol else ""
        rows.append(row)
    return pd.DataFrame(rows)


def summary_metrics(table: pd.DataFrame, bc_stats: Path | None, predictions: Path | None,
                    baseline: Path, triton: Path | None = None, confirm: Path | None = None) -> dict:
    """Plain numbers for `dvc exp show` (reports/metrics.json)."""
    out: dict = {}
    for name in STRATEGIES:
        col = table[f"{name}_change"].dropna()
        out[f"{name}_kernels"] = int(col.size)
        out[f"{name}_mean_change"] = float(col.mean()) if col.size else None
        out[f"{name}_median_change"] = float(col.median()) if col.size else None
    both = table[["greedy_change", "random_change"]].dropna()
    if both.size:
        out["greedy_vs_random_same_kernels"] = {"kernels": len(both),
                                                "greedy_mean": float(both["greedy_change"].mean()),
                                                "random_mean": float(both["random_change"].mean())}
    for split in ("train", "heldout"):
        t = table[(table["split"] == split)].dropna(subset=["policy_change", "oracle_change", "greedy_change"])
        if len(t):
            out[f"{split}_kernels"] = len(t)
            out[f"{split}_policy_mean_change"] = float(t["policy_change"].mean())
            out[f"{split}_greedy_mean_change"] = float(t["greedy_change"].mean())
            out[f"{split}_oracle_mean_change"] = float(t["oracle_change"].mean())
            out[f"{split}_oracle_fraction"] = _log_gain(t["policy_change"]) / _log_gain(t["oracle_change"])
            out[f"{split}_distinct_sequences"] = int(t["policy_actions"].nunique())
    if table["policy_change"].notna().any():
        out["policy_distinct_sequences"] = int(table.loc[table["policy_change"].notna(), "policy_actions"].nunique())
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
    tri = _load(triton)
    if tri:
        s = tri["summary"]
        out.update(triton_kernels=s["kernels"], triton_measured=s["measured"],
                   triton_geomean_speedup=s["geomean_speedup_cycles"], triton_geomean_speedup_time=s["geomean_speedup_time"],
                   triton_wrong_outputs=s["wrong_outputs"], triton_slower=s["slower_than_baseline"],
                   triton_faster=s["verdicts"].get("faster", 0), triton_distinct_sequences=s["distinct_sequences"])
        if b := s.get("beam"):
            out.update({f"triton_beam_{k}": b[k] for k in ("k", "kernels", "incomplete", "faster", "slower_in_time",
                                                          "rejected_slower_in_time", "wrong_outputs",
                                                          "candidates_measured") if k in b},
                       triton_beam_geomean_speedup=b["geomean_speedup_cycles"],
                       triton_beam_geomean_speedup_time=b["geomean_speedup_time"])
    conf = _load(confirm)
    if conf:
        for split in ("train", "heldout"):
            c = conf["summary"][split]
            out.update({f"confirmed_{split}_{k}": c[k] for k in (
                "kernels", "oracle_mean_change", "policy_mean_change", "greedy_mean_change", "fixed_mean_change",
                "policy_oracle_fraction", "policy_unconfirmed", "distinct_oracle_sets")})
        out["confirmed_kernels_beating_fixed_set"] = len(conf["summary"]["all"]["kernels_beating_fixed_set"])
    return out
