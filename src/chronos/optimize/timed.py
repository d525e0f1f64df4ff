"""The optimize path in wall time, for multi-thread kernels (Triton's, a user's): predict → candidates →
one side-by-side comparison → verify → choose.

    result = optimize_time(spec, module, backend, policy, max_steps=6, min_gain=0.005, beam=8,
                           timing=TimingConfig())
    result.chosen, result.ptx   # a verified variant whose time ratio to the baseline has its whole
                                # confidence interval below 1 - min_gain, or the baseline itself

The policy's greedy decoding and (beam > 1) its `beam` most probable distinct sets are measured together with
the baseline in one run (backend.compare), so every verdict is a ratio measured side by side with its
baseline, with a bootstrap interval (chronos.measure.verdicts). The fastest `faster` candidate is returned;
a candidate judged `no_difference` or `slower` never is, so the path never ships a slower or unverified
kernel. The %clock64 cycle path (optimize.cycles) stays for the seed's 1-thread gemm_tile kernels only.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from chronos.config import EnvConfig, TimingConfig
from chronos.errors import ChronosError, one_line
from chronos.kernels.spec import KernelSpec
from chronos.measure.verdicts import FASTER, SLOWER, geomean
from chronos.rl.decode import KernelSpace, beam_decode, greedy_decode
from chronos.search.timed import TimedEvaluator, time_row

_TIMING = TimingConfig()  # frozen: a shareable default


@dataclass
class TimeOptimizeResult:
    kernel: str
    sequence: tuple[str, ...]
    key: tuple[str, ...]
    baseline: dict | None = None
    primary: str = ""
    greedy: dict | None = None
    beam: list[dict] = field(default_factory=list)
    fixed: list[dict] = field(default_factory=list)
    """Extra sets measured beside the policy's (chronos tune's fixed sets)."""
    chosen: tuple[str, ...] = ()
    ptx: str = ""
    error: str | None = None
    measured_at: str = ""

    def chosen_row(self) -> dict | None:
        rows = [self.greedy, *self.beam, *self.fixed]
        return next((r for r in rows if r and tuple(r["actions"]) == self.chosen), None)

    def to_json(self) -> dict:
        row = {"kernel": self.kernel, "sequence": list(self.sequence), "final_set": list(self.key)}
        if self.error is not None:
            return {**row, "verdict": "unmeasured", "error": self.error}
        row.update(primary=self.primary, baseline=self.baseline, greedy=self.greedy, beam=self.beam,
                   **({"fixed": self.fixed} if self.fixed else {}),
                   verdict=self.greedy["verdict"] if self.key else "stop_first",
                   returned="+".join(self.chosen) or "baseline", measured_at=self.measured_at)
        best = self.chosen_row() if self.chosen else None
        if best is None:
            row.update(speedup_time=1.0, speedup_ci=[1.0, 1.0])
        else:
            lo, hi = best["ci"]
            row.update(speedup_time=1.0 / best["ratio"], speedup_ci=[1.0 / hi, 1.0 / lo])
        return row


def optimize_time(spec: KernelSpec, module, backend, policy, *, max_steps: int, min_gain: float,
                  beam: int = 1, timing: TimingConfig = _TIMING,
                  ptxas_legality: bool = EnvConfig.ptxas_legality,
                  extra: tuple | list = ()) -> TimeOptimizeResult:
    """The optimize path on one kernel (`module`: its parsed PTX). A comparison the backend cannot give (a
    replay miss) makes the result `unmeasured`, returning the baseline; it never raises for that. `extra`:
    further action sets measured in the same comparison (after the policy's), candidates like the others."""
    space = KernelSpace(module, ptxas_legality, policy.action_space, launch=spec)
    decoded = greedy_decode([space], policy, max_steps)[0]
    res = TimeOptimizeResult(spec.kernel, decoded.sequence, decoded.key)
    ev = TimedEvaluator(spec, module, backend, timing, min_gain)
    res.ptx = ev.root_ptx
    beams = beam_decode(space, policy, beam, max_steps) if beam > 1 else []
    try:
        cmp, idx = ev.compare([decoded.key, *[k for k, _ in beams], *extra])
    except ChronosError as e:
        res.error = one_line(e, 400)
        return res
    res.measured_at = cmp.provenance.get("created_at", "")
    res.primary = cmp.primary
    res.baseline = time_row(cmp, 0, timing, min_gain)
    res.greedy = _row(cmp, idx[0], decoded.key, timing, min_gain)
    res.beam = [{**_row(cmp, i, k, timing, min_gain), "logp": round(lp, 4)}
                for (k, lp), i in zip(beams, idx[1:1 + len(beams)], strict=True)]
    res.fixed = [_row(cmp, i, tuple(k), timing, min_gain)
                 for k, i in zip(extra, idx[1 + len(beams):], strict=True)]
    if not cmp.baseline.valid:
        return res
    faster = [r for r in [res.greedy, *res.beam, *res.fixed] if r["verdict"] == FASTER]
    if faster:
        res.chosen = tuple(min(faster, key=lambda r: r["ratio"])["actions"])
        res.ptx = ev.ptx[res.chosen]  # the PTX that was measured, not a second realisation
    return res


def _row(cmp, i: int | None, key: tuple, timing: TimingConfig, min_gain: float) -> dict:
    if i is None:
        return {"actions": list(key), "valid": False, "reason": "illegal_in_order",
                "verdict": "invalid:illegal_in_order"}
    if i == 0:  # the empty set (stop first): the baseline itself, never a speedup
        return {**time_row(cmp, 0, timing, min_gain), "actions": list(key), "verdict": "stop_first"}
    return time_row(cmp, i, timing, min_gain)


def summarize_time(rows: list[dict]) -> dict:
    """Per tier: how many kernels were measured, returned faster, and the geomean time speedup of what the
    path returned (the baseline counts 1.0); candidates judged slower or wrong are counted, never shipped."""
    done = [r for r in rows if "speedup_time" in r]
    cands = [c for r in done for c in [r["greedy"], *r["beam"]] if c]
    return {"kernels": len(rows), "measured": len(done),
            "faster": sum(r["returned"] != "baseline" for r in done),
            "slower": sum(r["speedup_time"] < 1.0 for r in done),
            "wrong": sum(c["verdict"] == "invalid:wrong_output" for c in cands),
            "candidates_slower": sum(c["verdict"] == SLOWER for c in cands),
            "time_geomean": geomean([r["speedup_time"] for r in done]),
            "distinct_sequences": len({tuple(r["final_set"]) for r in rows})}
