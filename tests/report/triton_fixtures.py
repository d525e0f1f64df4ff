"""Small Triton reports in the wall-time formats of stages search_triton, evaluate and aa (hand-written, so
the report tests depend on those formats, not on the stages' code).

Tier `triton` (small): k_add is sped up (greedy and the policy agree on vec_ld), k_norm is left as it was,
k_mm stays the baseline, k_fail failed (greedy) / was not measured (policy). Tier `triton_llm`: one kernel,
sped up by greedy only. The A/A test: 16 decisions, one of them a false `faster`.
"""

from __future__ import annotations

import json
from pathlib import Path

TIMING = {"rounds": 15, "reps": 5, "l2": "cold", "spin_us": 30.0, "graph_launches": 20, "graph_reps": 2,
          "graph_below_us": 20.0, "confidence": 0.99, "resamples": 4000}
PROVENANCE = {"gpu": "NVIDIA H200", "backend": "replay", "created_at": "2026-12-01T10:00:00Z"}


def trow(actions: list[str], verdict: str, ratio: float | None = None, ci: list[float] | None = None,
         time_ms: float = 0.01) -> dict:
    """One contender's row (TROW): its time, registers and, when timed against the baseline, the ratio."""
    row = {"actions": actions, "valid": not verdict.startswith("invalid"),
           "reason": verdict.removeprefix("invalid:") if verdict.startswith("invalid") else "",
           "time_ms": time_ms, "time_ms_iqr": time_ms / 50, "registers": 32, "spills": 0, "verdict": verdict}
    if ratio is not None:
        row.update(ratio=ratio, ci=ci or [ratio, ratio])
    return row


def _greedy_row(kernel: str, actions: list[str], ratio: float, ci: list[float], trace: list[dict]) -> dict:
    best = trow(actions, "faster" if actions else "no_difference", ratio, ci, 0.01 * ratio)
    return {"kernel": kernel, "strategy": "greedy_time", "primary": "graph",
            "baseline": trow([], "no_difference"), "best": best, "comparisons": len(trace) + 1,
            "trace": trace, "measured": {"first": "2026-12-01T10:00:00Z", "last": "2026-12-01T10:01:00Z"}}


def search_report() -> dict:
    """reports/triton_search.json."""
    wrong = {"step": 0, "candidates": [trow(["vec_st"], "invalid:wrong_output"),
                                       trow(["vec_ld"], "faster", 0.8, [0.78, 0.82])]}
    small = [_greedy_row("k_add", ["vec_ld"], 0.8, [0.78, 0.82], [wrong]),
             _greedy_row("k_norm", [], 1.0, [1.0, 1.0], []),
             {"kernel": "k_fail", "error": "replay miss: run search_triton on a GPU"}]
    llm = [_greedy_row("k_mm_llm", ["cache_cg"], 0.9, [0.88, 0.93], [])]
    return {"provenance": PROVENANCE,
            "params": {"families": ["triton", "triton_llm"], "max_steps": 6, "min_gain": 0.005,
                       "timing": TIMING},
            "tiers": {
                "triton": {"summary": {"kernels": 3, "measured": 2, "failed": 1, "faster": 1, "slower": 0,
                                       "wrong": 1, "time_geomean": 1.25 ** 0.5, "comparisons": 3},
                           "kernels": small},
                "triton_llm": {"summary": {"kernels": 1, "measured": 1, "failed": 0, "faster": 1, "slower": 0,
                                           "wrong": 0, "time_geomean": 1 / 0.9, "comparisons": 1},
                               "kernels": llm}}}


def _policy_row(kernel: str, chosen: list[str], ratio: float, ci: list[float], roofline: dict) -> dict:
    greedy = trow(chosen or ["vec_st"], "faster" if chosen else "no_difference", ratio, ci)
    return {"kernel": kernel, "sequence": greedy["actions"], "final_set": greedy["actions"],
            "primary": "graph",
            "baseline": trow([], "no_difference"), "greedy": greedy,
            "beam": [{**trow(["cache_cg"], "invalid:wrong_output"), "logp": -2.5}],
            "verdict": greedy["verdict"], "returned": "+".join(chosen) or "baseline",
            "speedup_time": 1 / ratio if chosen else 1.0,
            "speedup_ci": [1 / ci[1], 1 / ci[0]] if chosen else [1.0, 1.0],
            "measured_at": "2026-12-01T11:00:00Z",
            "roofline": {"bytes": 1 << 20, "flops": None, "achieved_GBps": 100.0, "achieved_TFLOPs": None,
                         "bound": "memory", **roofline}}


def evaluate_report() -> dict:
    """reports/measure_triton_results.json (roofline fractions 0.5, 0.3, 0.7 small; 0.8 llm)."""
    small = [_policy_row("k_add", ["vec_ld"], 0.8, [0.77, 0.83],
                         {"bandwidth_fraction": 0.5, "flop_fraction": None}),
             _policy_row("k_norm", [], 1.0, [0.99, 1.01], {"bandwidth_fraction": 0.3, "flop_fraction": None}),
             _policy_row("k_mm", [], 1.0, [0.99, 1.02], {"bandwidth_fraction": 0.2, "flop_fraction": 0.7}),
             {"kernel": "k_fail", "verdict": "unmeasured", "error": "replay miss"}]
    llm = [_policy_row("k_mm_llm", [], 1.0, [0.98, 1.01], {"bandwidth_fraction": 0.1, "flop_fraction": 0.8})]
    return {"provenance": {**PROVENANCE, "checkpoint": "models/checkpoint_best.pt"},
            "probes": {"probe_copy_f32_n268435456": {"time_ms": 0.5, "time_ms_iqr": 0.001, "bytes": 2 << 30,
                                                     "flops": None, "measured_at": "2026-12-01T11:00:00Z"}},
            "peaks": {"peak_bandwidth_Bps": 4.3e12, "peak_flops": 7.5e14},
            "tiers": {
                "triton": {"summary": {"kernels": 4, "measured": 3, "faster": 1, "slower": 0, "wrong": 3,
                                       "candidates_slower": 0, "time_geomean": 1.25 ** (1 / 3),
                                       "distinct_sequences": 2, "roofline_median": 0.5},
                           "kernels": small},
                "triton_llm": {"summary": {"kernels": 1, "measured": 1, "faster": 0, "slower": 0, "wrong": 1,
                                           "candidates_slower": 0, "time_geomean": 1.0,
                                           "distinct_sequences": 1, "roofline_median": 0.8},
                               "kernels": llm}}}


def aa_report() -> dict:
    """reports/aa.json: 2 kernels x 8 copies, one copy called faster."""
    def copies(false_at: int | None) -> list[dict]:
        return [{"copy": "committed_ptx" if i == 0 else f"reload_{i}",
                 "verdict": "faster" if i == false_at else "no_difference",
                 "ratio": 0.99 if i == false_at else 1.0,
                 "ci": [0.985, 0.994] if i == false_at else [0.99, 1.01]}
                for i in range(8)]
    return {"provenance": PROVENANCE, "params": {"copies": 8, "min_gain": 0.005, "timing": TIMING},
            "summary": {"decisions": 16, "false_faster": 1 / 16, "false_slower": 0.0, "invalid": 0,
                        "kernels": 2, "failed": 0, "ratio_p01": 0.99, "ratio_p99": 1.0},
            "kernels": [{"family": "triton", "kernel": k, "primary": "graph", "baseline_ms": 0.01,
                         "copies": copies(at), "measured_at": "2026-12-01T12:00:00Z"}
                        for k, at in (("k_add", 3), ("k_norm", None))]}


REPORTS = {"triton_search.json": search_report, "measure_triton_results.json": evaluate_report,
           "aa.json": aa_report}


def write_all(reports: Path) -> None:
    """The three Triton reports, in the new formats, into `reports`."""
    for name, make in REPORTS.items():
        (reports / name).write_text(json.dumps(make(), indent=1))
