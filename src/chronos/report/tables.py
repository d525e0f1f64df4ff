"""Per-kernel comparison of baseline, greedy, random and (when measured) the oracle, and summary metrics
(the gemm_tile ones flat, the Triton tiers' and the A/A test's nested).

The functions take the reports already parsed (the stage reads them, so a bad file is named there);
an optional report that was not produced is None.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd

from chronos.errors import ChronosError


def _by_kernel(report: dict | None) -> dict[str, dict]:
    """kernel -> entry, leaving out failed kernels and incomplete oracles."""
    return {k["kernel"]: k for k in (report or {}).get("kernels", [])
            if "error" not in k and k.get("complete", True)}


def _policy_rows(training: dict | None) -> dict[str, dict]:
    """training_result.json rows in the strategies' shape (best cycles, change, action set, split)."""
    out = {}
    for k in (training or {}).get("kernels", []):
        ok = k.get("valid") and k.get("final_cycles") is not None
        out[k["kernel"]] = {"best": {"cycles": k["final_cycles"] if ok else k["baseline_cycles"],
                                     "cycles_iqr": None, "actions": k.get("sequence", [])},
                            "change": k["change"] if ok else 0.0, "evaluated": None, "split": k.get("split")}
    return out


STRATEGIES = ("greedy", "random", "oracle", "policy")


def _log_gain(changes: pd.Series) -> float:
    """Mean log(baseline / best) of relative cycle changes."""
    return float(np.mean(-np.log1p(changes)))


def search_table(baseline: dict, greedy: dict, random: dict | None = None, oracle: dict | None = None,
                 training: dict | None = None, family: str = "gemm_tile") -> pd.DataFrame:
    """One row per kernel of `family`: baseline cycles (median, IQR) and, per strategy (greedy, random,
    oracle, and the GRPO policy's greedy rollout), best cycles, the relative change and the action set.
    Missing strategies (not run, or not on that kernel) are NaN. The policy's invalid finals count as 0
    change (the optimize path returns the baseline)."""
    strategies = {"greedy": _by_kernel(greedy), "random": _by_kernel(random),
                  "oracle": _by_kernel(oracle), "policy": _policy_rows(training)}
    rows = []
    for k in baseline["kernels"]:
        if k.get("family") != family:
            continue
        # The strategies replay the atlas, whose baseline is the emitted root PTX measured in the atlas run;
        # baseline.json measured the kernel file itself in an earlier run. Compare like with like.
        ref = (strategies["oracle"].get(k["kernel"]) or strategies["greedy"].get(k["kernel"])
               or {}).get("baseline")
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


def summary_metrics(table: pd.DataFrame, bc_stats: dict | None, predictions: dict | None,
                    baseline: dict, triton: dict | None = None, confirm: dict | None = None,
                    triton_search: dict | None = None, aa: dict | None = None) -> dict:
    """Plain numbers for `dvc exp show` (reports/metrics.json). `triton` is measure_triton_results.json,
    `triton_search` triton_search.json and `aa` aa.json: their metrics are nested under "triton" (one entry
    per tier) and "aa", each present only when its report is."""
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
        t = table[table["split"] == split].dropna(subset=["policy_change", "oracle_change", "greedy_change"])
        if len(t):
            out[f"{split}_kernels"] = len(t)
            out[f"{split}_policy_mean_change"] = float(t["policy_change"].mean())
            out[f"{split}_greedy_mean_change"] = float(t["greedy_change"].mean())
            out[f"{split}_oracle_mean_change"] = float(t["oracle_change"].mean())
            out[f"{split}_oracle_fraction"] = _log_gain(t["policy_change"]) / _log_gain(t["oracle_change"])
            out[f"{split}_distinct_sequences"] = int(t["policy_actions"].nunique())
    if table["policy_change"].notna().any():
        ran = table["policy_change"].notna()
        out["policy_distinct_sequences"] = int(table.loc[ran, "policy_actions"].nunique())
    out["baseline_valid"] = sum(k["valid"] for k in baseline["kernels"])
    out["baseline_kernels"] = len(baseline["kernels"])
    if bc_stats:
        out["bc_train_acc"] = bc_stats.get("best_train_acc")
        out["bc_heldout_acc"] = bc_stats.get("best_heldout_acc")
    if predictions:
        seqs = ["+".join(k["predicted"]) for k in predictions["kernels"]]
        out["predicted_distinct_sequences"] = len(set(seqs))
        out["predicted_kernels"] = len(seqs)
    if tiers := triton_metrics(triton, triton_search):
        out["triton"] = tiers
    if aa and aa.get("summary"):
        out["aa"] = {k: aa["summary"][k] for k in ("decisions", "false_faster", "false_slower")
                     if k in aa["summary"]}
    if confirm:
        out.update(_confirm_metrics(confirm["summary"]))
    return out


TIERS = {"triton": "small", "triton_llm": "llm"}
"""Triton family -> its tier's name in metrics.json and the README."""


def tier_name(family: str) -> str:
    return TIERS.get(family, family)


def roofline_fraction(row: dict) -> float | None:
    """A kernel's roofline fraction: the larger of its bandwidth and flop fractions (None: not placed)."""
    roof = row.get("roofline") or {}
    fracs = [roof[k] for k in ("bandwidth_fraction", "flop_fraction") if roof.get(k) is not None]
    return max(fracs) if fracs else None


def _evaluate_tier(tier: dict) -> dict:
    s = tier.get("summary", {})
    out = {k: s[k] for k in ("time_geomean", "faster", "slower", "wrong", "measured", "kernels") if k in s}
    fracs = [f for r in tier.get("kernels", []) if (f := roofline_fraction(r)) is not None]
    if fracs:
        out["roofline_median"] = float(np.median(fracs))
    return out


def triton_metrics(evaluate: dict | None, search: dict | None) -> dict:
    """Per tier ("small", "llm"): the policy's optimize path in wall time (evaluate) and greedy's
    (search_triton). A report that was not produced, or lacks a tier, leaves its keys out."""
    out: dict[str, dict] = {}
    for family, tier in ((evaluate or {}).get("tiers") or {}).items():
        out.setdefault(tier_name(family), {}).update(_evaluate_tier(tier))
    for family, tier in ((search or {}).get("tiers") or {}).items():
        s = tier.get("summary", {})
        out.setdefault(tier_name(family), {}).update(
            {f"greedy_{k}": s[k] for k in ("time_geomean", "faster", "wrong") if k in s})
    return {name: m for name, m in out.items() if m}


def _confirm_metrics(summary: dict) -> dict:
    """confirm.json's summary, per split, and how many kernels beat the best fixed set."""
    out = {}
    for split in ("train", "heldout"):
        c = summary[split]
        out.update({f"confirmed_{split}_{k}": c[k] for k in (
            "kernels", "oracle_mean_change", "policy_mean_change", "greedy_mean_change", "fixed_mean_change",
            "policy_oracle_fraction", "policy_unconfirmed", "distinct_oracle_sets")})
    out["confirmed_kernels_beating_fixed_set"] = len(summary["all"]["kernels_beating_fixed_set"])
    return out


def read_grpo_curves(path: Path) -> pd.DataFrame:
    """grpo_curves.csv (stage grpo, one row per epoch); an unreadable one is an error naming the file."""
    try:
        df = pd.read_csv(path)
    except FileNotFoundError:
        raise ChronosError(f"{path}: GRPO curves not found (run the stage that writes it first)") from None
    except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError) as e:
        raise ChronosError(f"{path}: GRPO curves are not valid CSV (truncated or corrupt?): {e}") from None
    if "epoch" not in df.columns:
        raise ChronosError(f"{path}: GRPO curves have no 'epoch' column (truncated or corrupt?)")
    return df


def captured_metrics(captured: dict | None) -> dict:
    """reports/captured.json as metrics: capture.<w>.kernels (and distinct_ptx), and where they ran
    tune.<w>.{faster,slower,unchanged,skipped,unmeasured,time_geomean,replayed_as_recorded,not_tuned} and
    e2e.<w>.{speedup,outputs_equal,swapped,db_entries} (and e2e_deterministic.<w>, run with torch's
    deterministic algorithms)."""
    out: dict = {}
    for w, s in sorted(((captured or {}).get("workloads") or {}).items()):
        out.setdefault("capture", {})[w] = {"kernels": s["kernels"], "distinct_ptx": s["distinct_ptx"],
                                            "dropped": s.get("dropped")}
        if "tune" in s:
            out.setdefault("tune", {})[w] = {k: s["tune"][k] for k in
                                             ("faster", "slower", "unchanged", "not_confirmed", "skipped",
                                              "unmeasured",
                                              "time_geomean", "replayed_as_recorded", "not_tuned")
                                             if k in s["tune"]}
        for key in ("e2e", "e2e_deterministic"):
            if key in s:
                out.setdefault(key, {})[w] = {"speedup": s[key]["speedup"]["median"],
                                              "outputs_equal": s[key]["outputs_equal"],
                                              "swapped": s[key].get("swapped"),
                                              "db_entries": s[key].get("db_entries"), "method": "workers"}
        if "e2e_one_process" in s:  # steps alternating in one process: it replaces the workers' numbers
            one = s["e2e_one_process"]
            out.setdefault("e2e", {})[w] = {
                "speedup": one["speedup"]["median"], "ci95": one["speedup"]["ci95"],
                "aa": one["aa"]["median"], "aa_ci95": one["aa"]["ci95"],
                # dvc metrics and `dvc exp show` list numbers, not lists: the bounds as numbers too
                "ci95_low": one["speedup"]["ci95"][0], "ci95_high": one["speedup"]["ci95"][1],
                "aa_ci95_low": one["aa"]["ci95"][0], "aa_ci95_high": one["aa"]["ci95"][1],
                "outputs_equal": one["outputs"]["tuned_bitwise"],
                "stock_deterministic": one["outputs"]["stock_deterministic"], "swapped": one["swapped"],
                "configs_applied": one["configs_applied"], "gpu": one["gpu"], "method": "one_process",
                "timing": one.get("timing", "python_steps"),
                # the DB the step chose (chronos.tuning.step_choice): "tuned" is the full DB
                "deployed_set": (one.get("deployed") or {}).get("set", "tuned")}
            for a, v in one.get("anchors", {}).items():  # Inductor's tuners, step by step
                out["e2e"][w].setdefault("anchors", {})[a] = {
                    "speedup": v["speedup"]["median"], "ci95": v["speedup"]["ci95"],
                    "v3_over": v["v3_over"]["median"], "v3_over_ci95": v["v3_over"]["ci95"]}
        if "e2e_anchors" in s:
            out.setdefault("anchor", {})[w] = anchor_metrics(s["e2e_anchors"])
            if "e2e_anchors_earlier" in s:  # another run, its own v3 DB: never mixed into this run's ratios
                out["anchor"][w]["earlier_run"] = anchor_metrics(s["e2e_anchors_earlier"])
            if "e2e_anchor_runs" in s:
                out["anchor"][w]["across_runs"] = s["e2e_anchor_runs"]
    for name, s in sorted(((captured or {}).get("libraries") or {}).items()):
        tune, tests = s.get("tune", {}), s["tests"]
        out.setdefault("library", {})[name] = {
            "kernels": s["kernels"], "dropped": s["dropped"], "tuned": tune.get("kernels", 0) - tune.get(
                "unmeasured", 0) - tune.get("skipped", 0), "faster": tune.get("faster", 0),
            "time_geomean": tune.get("time_geomean"), "tests_collected": tests["collected"],
            "tests_passed_stock": tests["passed_stock"], "tests_passed_tuned": tests["passed_tuned"]}
        if "failed_tuned_only" in tests:  # a second stock run tells stock's own flakes from Chronos's
            out["library"][name] |= {"tests_passed_stock_repeat": tests["passed_stock_repeat"],
                                     "tests_failed_tuned_only": len(tests["failed_tuned_only"])}
    return out


def _searched(report: dict | None) -> dict:
    return {Path(f).name: {k: s[k] for k in ("measured", "faster", "time_geomean")}
            for f, s in ((report or {}).get("summary") or {}).items() if s.get("measured")}


def random_vs_greedy(headroom: dict | None, random_time: dict | None) -> dict | None:
    """Stage random_time against stage headroom on the kernels both searched: each search's geomean speedup
    (its set against the baseline in its own last comparison) and on how many kernels each found the
    larger one (1% apart at least; else even)."""
    def speedups(rep):
        return {r["kernel"]: r["speedup"] for r in (rep or {}).get("kernels", []) if "best" in r}
    g, r = speedups(headroom), speedups(random_time)
    both = sorted(set(g) & set(r))
    if not both:
        return None
    def geomean(xs):
        return float(np.exp(np.mean([math.log(x) for x in xs])))  # libm logs: the same bits on any CPU
    return {"kernels": len(both), "random_time_geomean": geomean([r[k] for k in both]),
            "greedy_geomean": geomean([g[k] for k in both]),
            "random_larger": sum(r[k] > 1.01 * g[k] for k in both),
            "greedy_larger": sum(g[k] > 1.01 * r[k] for k in both),
            **{k: random_time["params"].get(k) for k in ("sets", "max_steps", "seed")}}


def headroom_metrics(headroom: dict | None, census: dict | None = None, heldout: dict | None = None,
                     random_time: dict | None = None) -> dict:
    """reports/{headroom,census,heldout}.json as metrics under v2: headroom.<family> and census.<family>
    {measured,faster,time_geomean} (a family under captured/ by its workload's name); heldout.{oracle_share,
    gap_closed,time_geomean,kernels} for the policy's greedy choice, heldout_beam.* for its beam,
    heldout_fixed_beam.* for the fixed ranking's beam (where heldout.fixed_beam scored it),
    fixed_set.time_geomean and oracle.time_geomean: stage heldout's totals over every held-out kernel,
    scored on the picks' side-by-side comparison; the same with suffix _census scored on the census;
    greedy_search.{kernels,multi_step,time_geomean}: stage headroom's sets on those kernels;
    random_time.<family> and random_vs_greedy (stage random_time: seeded random sets in time)."""
    v2 = {k: out for k, out in (("headroom", _searched(headroom)), ("census", _searched(census)),
                                ("random_time", _searched(random_time))) if out}
    if versus := random_vs_greedy(headroom, random_time):
        v2["random_vs_greedy"] = versus
    for suffix, key in (("", "measured"), ("_census", "total")):
        t = (heldout or {}).get(key) or {}
        if t.get("kernels"):
            for name, m in (("heldout", "policy"), ("heldout_beam", "beam"),
                            ("heldout_fixed_beam", "fixed_beam")):
                if m not in t:
                    continue
                v2[name + suffix] = {**t[m], "time_geomean": t["time_geomean"][m], "kernels": t["kernels"]}
            v2["fixed_set" + suffix] = {"time_geomean": t["time_geomean"]["fixed"]}
            v2["oracle" + suffix] = {"time_geomean": t["time_geomean"]["oracle"]}
    searched = (heldout or {}).get("greedy_search") or {}
    if searched.get("kernels"):  # multi-step, scored in its own search's last comparison
        v2["greedy_search"] = {k: searched[k] for k in ("kernels", "multi_step", "time_geomean")}
    return {"v2": v2} if v2 else {}


def anchor_metrics(run: dict) -> dict:
    """Inductor's tuners beside stock and Chronos v3 at the step, in one process (scripts/e2e_one_process.py
    --anchors): per tuner stock / tuner (`step_speedup`) and tuner / Chronos v3 (`v3_over`), each with its
    95% bounds as numbers, whether its outputs kept stock's bits; the run's own v3 and A/A beside them. Step
    ratios, not per-kernel geomeans: under these tuners Inductor launches other kernels."""
    def bounds(name: str, s: dict) -> dict:
        return {name: s["median"], f"{name}_ci95_low": s["ci95"][0], f"{name}_ci95_high": s["ci95"][1]}

    out = {"gpu": run["gpu"], "rounds": run["speedup"]["rounds"], "timing": run.get("timing", "python_steps"),
           **bounds("v3", run["speedup"]),
           **bounds("aa", run["aa"]), "v3_bitwise": run["outputs"]["tuned_bitwise"]}
    for a, v in run["anchors"].items():
        out[a] = {**bounds("step_speedup", v["speedup"]), **bounds("v3_over", v["v3_over"]),
                  "bitwise": v["bitwise"]}
    return out
