"""The seed's optimize path in %clock64 cycles, for its gemm_tile kernels: predict → candidates →
measure → verify → choose. Every other kernel goes through chronos.optimize.timed (wall time, side by
side, confidence intervals); this path refuses one.

    result = optimize(spec, module, backend, policy, max_steps=6, min_gain=0.005, beam=8)
    result.chosen, result.ptx   # the actions and PTX to ship: a verified, clearly faster variant
                                # or the baseline itself — never a slower or unverified kernel

The policy's greedy decoding gives one candidate; with `beam` > 1 its `beam` most probable distinct sets are
candidates too (chronos.rl.decode). Every candidate is measured by the backend (bit-exact verification
included) and gets a verdict against the baseline: `faster` only if valid, clearly faster in cycles
(`min_gain`, IQR bands apart) and not clearly slower in event-timed wall time. On replay a candidate that was
never measured is `unmeasured` and the path goes on with the others.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from chronos.config import EnvConfig
from chronos.errors import ChronosError, one_line
from chronos.kernels.spec import KernelSpec, judged_in_cycles
from chronos.measure.verdicts import geomean
from chronos.ptx import emit
from chronos.rl.decode import KernelSpace, beam_decode, greedy_decode
from chronos.search.base import CycleEvaluator, Outcome, clearly_faster


def clearly_slower_in_time(new: Outcome, old: Outcome) -> bool:
    """`new`'s event-timed median lies above `old`'s by more than half their IQRs together: fewer cycles
    (the max over threads of one launch) need not mean less wall time, and the optimize path promises both."""
    if not (new.time_ms and old.time_ms):
        return False
    return new.time_ms - (new.time_ms_iqr or 0.0) / 2 > old.time_ms + (old.time_ms_iqr or 0.0) / 2


def verdict(key: tuple, out: Outcome, base: Outcome, min_gain: float) -> str:
    """stop_first | invalid:<reason> | not_faster | slower_in_time | faster."""
    if not key:
        return "stop_first"
    if not out.valid:
        return f"invalid:{out.reason or 'invalid'}"
    if not clearly_faster(out, base, min_gain):
        return "not_faster"
    return "slower_in_time" if clearly_slower_in_time(out, base) else "faster"


@dataclass
class Candidate:
    """One measured candidate set (or one the backend could not answer: `outcome` None, `error` set)."""

    key: tuple[str, ...]
    outcome: Outcome | None
    verdict: str
    logp: float | None = None
    error: str | None = None


@dataclass
class OptimizeResult:
    """What the optimize path decided for one kernel, with everything it measured."""

    kernel: str
    sequence: tuple[str, ...]
    """The policy's greedy decoding, in the order chosen."""
    key: tuple[str, ...]
    """Its final canonical set."""
    baseline: Outcome | None
    greedy: Candidate | None
    """The greedy prediction's final set, measured (None when the baseline itself could not be measured)."""
    beam: list[Candidate] = field(default_factory=list)
    chosen: tuple[str, ...] = ()
    """The set returned with beam decoding (or greedy's when beam is 1); () is the baseline."""
    ptx: str = ""
    """The PTX of `chosen` (the baseline's when nothing was clearly faster)."""
    error: str | None = None

    @property
    def verdict(self) -> str:
        if self.error is not None:
            return "unmeasured"
        if not self.baseline.valid:
            return "baseline_invalid"
        return self.greedy.verdict

    def to_json(self) -> dict:
        """The row of reports/measure_triton_results.json: the greedy prediction (`verdict`, `optimize`) and,
        with beam decoding, every candidate (`beam`) and what the path returned over them
        (`optimize_beam`)."""
        row = {"kernel": self.kernel, "sequence": list(self.sequence), "final_set": list(self.key)}
        if self.error is not None:
            return {**row, "verdict": "unmeasured", "error": self.error}
        base, final = self.baseline, self.greedy.outcome
        row["baseline"], row["final"] = _numbers(base), _numbers(final)
        if not base.valid:
            return {**row, "verdict": "baseline_invalid"}
        if final.valid and self.key:
            row["change"] = final.cycles / base.cycles - 1.0
            timed = final.time_ms and base.time_ms
            row["time_change"] = final.time_ms / base.time_ms - 1.0 if timed else None
        row["verdict"] = self.verdict
        faster = self.verdict == "faster"
        row["optimize"] = {"returned": "variant" if faster else "baseline",
                           **_speedups(base, final if faster else base)}
        if self.beam:
            row["beam"] = [_candidate_json(c, base) for c in self.beam]
            best = next((c.outcome for c in self.beam if c.key == self.chosen and self.chosen), base)
            row["optimize_beam"] = {"returned": "+".join(self.chosen) or "baseline", **_speedups(base, best),
                                    "complete": all(c.verdict != "unmeasured" for c in self.beam)}
        return row


def _numbers(o: Outcome) -> dict:
    return {"cycles": o.cycles, "cycles_iqr": o.cycles_iqr, "time_ms": o.time_ms,
            "time_ms_iqr": o.time_ms_iqr,
            "valid": o.valid, "reason": o.reason}


def _speedups(base: Outcome, chosen: Outcome) -> dict:
    return {"speedup_cycles": base.cycles / chosen.cycles,
            "speedup_time": base.time_ms / chosen.time_ms if chosen.time_ms and base.time_ms else None}


def _candidate_json(c: Candidate, base: Outcome) -> dict:
    out = {"set": list(c.key), "logp": round(c.logp, 4)}
    if c.outcome is None:
        return {**out, "verdict": "unmeasured", "error": c.error}
    out.update(_numbers(c.outcome), verdict=c.verdict)
    if c.outcome.valid and c.key:
        out["change"] = c.outcome.cycles / base.cycles - 1.0
    return out


def _beam_candidates(ev, space, policy, base: Outcome, k: int, max_steps: int,
                     min_gain: float) -> list[Candidate]:
    """The policy's k most probable sets, each measured in its own backend call (one replay miss hides
    nothing else)."""
    cands = []
    for key, logp in beam_decode(space, policy, k, max_steps):
        try:
            out = ev.outcomes([key], space.module)[0] if key else base
        except ChronosError as e:
            cands.append(Candidate(key, None, "unmeasured", logp, one_line(e, 200)))
            continue
        cands.append(Candidate(key, out, verdict(key, out, base, min_gain), logp))
    return cands


def _fastest(base: Outcome, cands: list[Candidate]) -> tuple[str, ...]:
    best, best_key = base, ()
    for c in cands:
        if c.verdict == "faster" and c.outcome.cycles < best.cycles:
            best, best_key = c.outcome, c.key
    return best_key


def optimize(spec: KernelSpec, module, backend, policy, *, max_steps: int, min_gain: float, beam: int = 1,
             ptxas_legality: bool = EnvConfig.ptxas_legality) -> OptimizeResult:
    """Run the optimize path on one kernel (`module`: its parsed PTX). Never raises for a measurement the
    backend cannot give: the result says `unmeasured` and returns the baseline."""
    if not judged_in_cycles(spec):  # an instrumented twin's cycles are no speedup for a real kernel
        raise ChronosError(f"{spec.kernel}: %clock64 cycles are the seed's metric for its gemm_tile kernels; "
                           "every other kernel is judged in wall time: use chronos.optimize.timed")
    space = KernelSpace(module, ptxas_legality, policy.action_space, launch=spec)
    ev = CycleEvaluator(spec, module, backend)
    decoded = greedy_decode([space], policy, max_steps)[0]
    res = OptimizeResult(spec.kernel, decoded.sequence, decoded.key, None, None, ptx=ev.root_ptx)
    try:
        base, final = ev.outcomes([(), decoded.key], space.module)
    except ChronosError as e:
        res.error = one_line(e, 400)
        return res
    res.baseline = base
    res.greedy = Candidate(decoded.key, final, verdict(decoded.key, final, base, min_gain))
    if not base.valid:
        return res
    res.chosen = decoded.key if res.greedy.verdict == "faster" else ()
    if beam > 1:
        res.beam = _beam_candidates(ev, space, policy, base, beam, max_steps, min_gain)
        res.chosen = _fastest(base, res.beam)
    if res.chosen:
        res.ptx = emit(space.module(res.chosen))
    return res


def summarize(rows: list[dict]) -> dict:
    """Counts, verdicts and geomean speedups over the rows of many kernels (`OptimizeResult.to_json`)."""
    done = [r for r in rows if "optimize" in r]

    def speedup(key):
        return geomean([r["optimize"][key] for r in done])

    verdicts: dict[str, int] = {}
    for r in rows:
        verdicts[r["verdict"]] = verdicts.get(r["verdict"], 0) + 1
    return {"kernels": len(rows), "measured": len(done), "verdicts": dict(sorted(verdicts.items())),
            "geomean_speedup_cycles": speedup("speedup_cycles"),
            "geomean_speedup_time": speedup("speedup_time"),
            "wrong_outputs": sum(r["verdict"] == "invalid:wrong_output" for r in rows),
            "slower_than_baseline": sum(r["optimize"]["speedup_cycles"] < 1.0 for r in done),
            "distinct_sequences": len({tuple(r["final_set"]) for r in rows}),
            **({"beam": _summarize_beam(rows)} if any("beam" in r for r in rows) else {})}


def _summarize_beam(rows: list[dict]) -> dict:
    """The optimize path over the policy's k most probable sets, on the kernels whose k sets were all
    measured (a replay miss leaves a kernel out; run the stage on a GPU to measure them)."""
    done = [r for r in rows if r.get("optimize_beam", {}).get("complete")]
    cands = [c for r in rows for c in r.get("beam", [])]
    return {"k": max(len(r.get("beam", [])) for r in rows), "kernels": len(done),
            "incomplete": sum("optimize_beam" in r and not r["optimize_beam"]["complete"] for r in rows),
            "geomean_speedup_cycles": geomean([r["optimize_beam"]["speedup_cycles"] for r in done]),
            "geomean_speedup_time": geomean([r["optimize_beam"]["speedup_time"] for r in done]),
            "faster": sum(r["optimize_beam"]["returned"] != "baseline" for r in done),
            "slower_in_time": sum((r["optimize_beam"]["speedup_time"] or 1.0) < 1.0 for r in done),
            "rejected_slower_in_time": sum(c["verdict"] == "slower_in_time" for c in cands),
            "candidates_measured": sum(c["verdict"] != "unmeasured" for c in cands),
            "wrong_outputs": sum(c["verdict"] == "invalid:wrong_output" for c in cands)}
