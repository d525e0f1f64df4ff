"""Summaries of captured workloads and libraries (stage `captured`, and tune_captured's replay check): what
the capture kept and dropped, the tune's verdicts in time, the Amdahl bound on what it can give end to end,
the end-to-end runs and a library's own test suite stock and deployed."""

from __future__ import annotations

import json
import math
import statistics
from collections import Counter
from pathlib import Path

from chronos.files import read_json
from chronos.report.anchor_runs import across_runs, as_deployed, recorded_runs
from chronos.tuning.deploy_rule import confirmation, deploys
from chronos.tuning.step_choice import workload_step_choice


def amdahl_bound(share: float, kernel_speedup: float) -> float:
    """The end-to-end speedup if the Triton kernels (a `share` of GPU time) ran `kernel_speedup` x faster."""
    return 1.0 / ((1.0 - share) + share / kernel_speedup)


def tune_summary(parts: list[dict]) -> dict:
    """Per-kernel tune verdicts in time: faster / slower / unchanged / skipped / unmeasured and the geomean
    speedup of what would deploy (the baseline, ratio 1, where nothing was faster). Where a returned set was
    compared again (its `confirm`), that comparison decides: not confirmed counts as unchanged (and in
    `not_confirmed`), and a confirmed one's speedup is the confirming comparison's."""
    counts = {"faster": 0, "slower": 0, "unchanged": 0, "skipped": 0, "unmeasured": 0, "not_confirmed": 0}
    speedups, reasons = [], Counter()
    for row in parts:
        base = row.get("baseline") or {}
        if row.get("verdict") == "skipped":  # e.g. float atomics: not verifiable bit-exactly
            counts["skipped"] += 1
            reasons[row["reason"]] += 1
            continue
        if "error" in row or not base.get("valid", False):
            counts["unmeasured"] += 1
            reasons[row.get("error") or base.get("reason") or row.get("verdict", "?")] += 1
            continue
        returned, deployed = row.get("returned", "baseline") != "baseline", deploys(row)
        confirm = confirmation(row)
        counts["not_confirmed"] += returned and not deployed
        counts["faster" if deployed else "unchanged"] += 1
        counts["slower"] += int(row.get("speedup_time", 1.0) < 1.0 and deployed)
        speedups.append((1.0 / confirm["ratio"] if "ratio" in confirm else row.get("speedup_time", 1.0))
                        if deployed else 1.0)
    geomean = statistics.geometric_mean(speedups) if speedups else None
    return {"kernels": len(parts), **counts, "time_geomean": geomean, "unmeasured_reasons": dict(reasons)}


def workload_summary(d: Path, replay: dict | None = None) -> dict:
    cap = read_json(d / "capture.json", "capture summary")
    out = {"kernels": cap["kernels"], "distinct_ptx": cap["distinct_ptx"],
           "launch_signatures": cap["launch_signatures"], "launches": cap["launches"],
           "unmapped": len(cap["unmapped"]),
           "unmapped_reasons": sorted({u["reason"] for u in cap["unmapped"]}),
           "dropped": dropped_launches(cap)}
    if (d / "profile.json").is_file():
        prof = read_json(d / "profile.json", "workload profile")
        out["triton_share"] = {p: round(v["triton_share"], 4) for p, v in prof["phases"].items()}
        out["amdahl_bound_at_2x"] = {p: round(amdahl_bound(share, 2.0), 4)
                                     for p, share in out["triton_share"].items()}
    parts = sorted((d / "tune-parts").glob("*.json"))
    if parts:
        out["tune"] = tune_summary([json.loads(p.read_text()) for p in parts])
        if "triton_share" in out and out["tune"]["time_geomean"]:  # what the tune can give end to end
            out["amdahl_at_tune_geomean"] = {p: round(amdahl_bound(share, out["tune"]["time_geomean"]), 4)
                                             for p, share in out["triton_share"].items()}
        if replay is not None:
            out["tune"]["replayed_as_recorded"] = replay["agrees_with_record"]
            out["tune"]["not_tuned"] = len(replay["not_recorded"])
    for name, key in (("e2e.json", "e2e"), ("e2e-deterministic.json", "e2e_deterministic")):
        if (d / name).is_file():
            out[key] = e2e_summary(read_json(d / name, "end-to-end result"))
    one = None
    if (d / "e2e-one-process.json").is_file():
        one = read_json(d / "e2e-one-process.json", "end-to-end result")
        out["e2e_one_process"] = one_process_summary(one, choice := workload_step_choice(d))
        if one.get("anchors"):  # Inductor's tuners took turns in this run too: it is the anchors' as well
            out["e2e_anchors"] = out["e2e_one_process"]
    return out | tuner_runs(d, one, out.get("e2e_anchors"), choice["set"] if one else "tuned")


def tuner_runs(d: Path, one: dict | None, latest: dict | None, deployed: str = "tuned") -> dict:
    """e2e-anchors.json (an anchors run of its own): the anchors where the latest run (`one`, summarized as
    `latest` where it timed tuners) timed none, else `e2e_anchors_earlier` where it timed a tuner the
    latest did not; and the tuners' range over every recorded anchors run (each is one draw of them; v3 the
    set `deployed` where a run timed it)."""
    out = {}
    path = d / "e2e-anchors.json"
    own = read_json(path, "end-to-end result") if path.is_file() else None
    if own is not None:
        summary = one_process_summary(own)
        if latest is None:
            out["e2e_anchors"] = summary
        elif set(summary["anchors"]) - set(latest["anchors"]):
            out["e2e_anchors_earlier"] = summary
    runs = recorded_runs(d, [r for r in (one, own) if r is not None])
    if len(runs) > 1 or any(r.get("anchor_draws", 1) > 1 for r in runs):
        out["e2e_anchor_runs"] = across_runs(runs, deployed)
    return out


def exchangeable(w: dict, stock_runs: int) -> dict:
    """Is a tuned run beyond the stock envelope on racy tensors more often than one more stock run would be?
    scripts/e2e.py compares stock_a with `stock_runs` other stock-kernel runs (the other stocks and the hook
    on an empty DB); were the tuned run one more of them, its distance from stock_a would be the largest of
    stock_runs + 1 exchangeable ones with probability 1 / (stock_runs + 1) per tensor. Expected offenders and
    the binomial upper tail of those seen (tensors of one run are not independent: a guide, not a proof)."""
    racy = w["tensors"] - w["deterministic"]
    seen = sum(o.get("kind") == "racy" for o in w.get("offenders", []))
    q = 1.0 / (stock_runs + 1)
    tail = sum(math.comb(racy, k) * q**k * (1 - q) ** (racy - k) for k in range(seen, racy + 1))
    return {"racy": racy, "racy_offenders": seen, "expected_if_stock": racy * q, "p_if_stock": tail}


def one_process_summary(e2e: dict, choice: dict | None = None) -> dict:
    """scripts/e2e_one_process.py's result without its per-round times: the step-time ratio stock / tuned and
    the A/A (stock / its second copy) with their intervals, per phase too, what was deployed, the outputs.
    `choice` (chronos.tuning.step_choice): where the step chose a set less some winners, that set is
    Chronos's (anchor_runs.as_deployed: its step ratio, each tuner over it; deployed_set: the rest)."""
    run = as_deployed(e2e, choice["set"]) if choice else e2e
    hook = e2e.get("hook") or {}
    out = {"speedup": run["speedup"], "aa": e2e["aa"], "per_phase": e2e.get("per_phase", {}),
           "timing": e2e.get("timing", "python_steps"), "graphs": e2e.get("graphs"),
           "outputs": e2e["outputs"], "steps": e2e.get("steps"), "kernels": e2e.get("kernels"),
           "configs_applied": len(e2e.get("configs_applied") or {}), "swapped": hook.get("swapped", 0),
           "db_entries": hook.get("entries"), "gpu": (e2e.get("provenance") or {}).get("gpu"),
           "anchors": {a: {k: v[k] for k in ("speedup", "v3_over", "bitwise")}
                       for a, v in (run.get("anchors") or {}).items()}}
    return deployed_set(out, e2e, choice) if run is not e2e else out


def deployed_set(out: dict, e2e: dict, choice: dict) -> dict:
    """The summary of the set the step chose (its step ratio and the tuners over it already in `out`): its
    phases, outputs and what of its DB deployed; the full DB's step beside (`deployed`)."""
    also = e2e["also"][choice["set"]]
    hook = also.get("hook") or {}
    per_phase = {ph: {**v, "speedup": also["per_phase"][ph]["speedup"]} for ph, v in out["per_phase"].items()}
    return {**out, "per_phase": per_phase,
            "outputs": {**out["outputs"], "tuned_bitwise": not also["differing_phases"]},
            "configs_applied": len(hook.get("configs_applied") or {}), "swapped": hook.get("swapped", 0),
            "db_entries": hook.get("entries"),
            "deployed": {"set": choice["set"], "why": choice["why"], "full_db": e2e["speedup"],
                         "over_full_db": also["over_tuned"]}}


def dropped_launches(cap: dict) -> int:
    """Launches the capture did not turn into specs. Captures before the drop count (issue #25) list only
    unmapped signatures, each at least one launch."""
    if "dropped_launches" in cap:
        return int(cap["dropped_launches"])
    return len(cap["unmapped"])


def library_summary(d: Path) -> dict:
    """A library's acceptance run: its capture and tune (as a workload) and its own test suite, passed
    stock and with the tuned DB deployed (`chronos run --db`)."""
    out = workload_summary(d)
    acc = read_json(d / "acceptance.json", "library acceptance record")
    out["tests"] = {k: acc[k] for k in ("collected", "passed_stock", "passed_tuned", "failed_stock",
                                        "failed_tuned", "deployed")}
    out["tests"] |= {k: acc[k] for k in ("stock_repeated", "passed_stock_repeat", "stock_unrepeatable",
                                         "failed_tuned_only", "passed_tuned_only") if k in acc}
    return out


def e2e_summary(e2e: dict) -> dict:
    """scripts/e2e.py's result without its per-round times: ratios, bitwise verdicts, the DB it ran with."""
    out = {k: e2e[k] for k in ("speedup", "aa_control", "outputs_equal", "stock_deterministic", "hook_cost",
                               "swap_effect", "hooked_outputs_equal", "phases_equal", "stock_self_equal",
                               "deterministic_algorithms", "stock_runs", "aa_extra") if k in e2e}
    out["within_stock_spread"] = {  # the phases where stock differs from itself
        p: {k: v for k, v in w.items() if k != "offenders"} | {"offenders": len(w.get("offenders", []))}
        | exchangeable(w, e2e.get("stock_runs", 2))
        for p, w in (e2e.get("within_stock_spread") or {}).items()}
    out["swapped"] = (e2e.get("hook") or {}).get("swapped", 0)
    out["db_entries"] = (e2e.get("hook") or {}).get("entries")  # the DB it ran with
    return out
