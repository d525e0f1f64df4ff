"""Stage `evaluate`: the trained policy, zero-shot, on the 33 Triton kernels, through the optimize path.

    python -m chronos.stages.evaluate --params params.yaml --kernels data/kernels \
        --store data/store/measurements.sqlite --checkpoint models/checkpoint_best.pt \
        --out reports/measure_triton_results.json [--backend gpu|replay|auto]

Per kernel: the policy's greedy rollout (masked, at most `predict.max_steps` transforms) gives a sequence;
the baseline and the variant are measured (bit-exact verification included). The optimize path returns the
variant only if it is valid, clearly faster in cycles (`search.greedy.min_gain`, IQR bands apart) and not
clearly slower in event-timed wall time (verdict `slower_in_time` otherwise), else the baseline, so it never
returns a slower or unverified kernel. On replay, a kernel whose prediction was
never measured is reported as `unmeasured` (run this stage on a GPU to measure it) and the run goes on.

With `predict.beam: k` (k > 1) the optimize path also measures the policy's k most probable distinct sets
(chronos.rl.beam) and returns the fastest clearly faster verified one: the greedy answer is one candidate
among them. Both are reported (`optimize`, `optimize_beam`; summary `beam`).
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path

import torch
import yaml

from chronos.errors import ChronosError
from chronos.kernels.spec import load_module
from chronos.search.base import Outcome, clearly_faster
from chronos.stages.common import kernels_of


def _m(o: Outcome) -> dict:
    return {"cycles": o.cycles, "cycles_iqr": o.cycles_iqr, "time_ms": o.time_ms, "time_ms_iqr": o.time_ms_iqr,
            "valid": o.valid, "reason": o.reason}


def clearly_slower_in_time(new: Outcome, old: Outcome) -> bool:
    """`new`'s event-timed median lies above `old`'s by more than half their IQRs together: fewer cycles
    (the max over threads of one launch) need not mean less wall time, and the optimize path promises both."""
    if not (new.time_ms and old.time_ms):
        return False
    return new.time_ms - (new.time_ms_iqr or 0.0) / 2 > old.time_ms + (old.time_ms_iqr or 0.0) / 2


def _verdict(key: tuple, out: Outcome, base: Outcome, min_gain: float) -> str:
    if not key:
        return "stop_first"
    if not out.valid:
        return f"invalid:{out.reason or 'invalid'}"
    if not clearly_faster(out, base, min_gain):
        return "not_faster"
    return "slower_in_time" if clearly_slower_in_time(out, base) else "faster"


def _speedups(base: Outcome, chosen: Outcome) -> dict:
    return {"speedup_cycles": base.cycles / chosen.cycles,
            "speedup_time": base.time_ms / chosen.time_ms if chosen.time_ms and base.time_ms else None}


def evaluate_kernel(env, policy, kernel: str, max_steps: int, min_gain: float, beam: int = 1) -> dict:
    """The greedy prediction (`verdict`, `optimize`) and, with beam > 1, the policy's `beam` most probable
    sets measured too (`beam`, `optimize_beam`: the best clearly faster verified one, else the baseline)."""
    from chronos.rl.beam import policy_beam
    from chronos.rl.grpo import Rollout, run_rollouts

    r = Rollout(kernel, "greedy")
    run_rollouts(env, [r], policy, policy, 1.0, torch.Generator(), max_steps)
    row = {"kernel": kernel, "sequence": r.sequence, "final_set": list(r.key)}
    try:
        base, final = env.evaluate(kernel, [(), r.key])
    except ChronosError as e:
        return {**row, "verdict": "unmeasured", "error": " ".join(str(e).split())[:400]}
    row["baseline"], row["final"] = _m(base), _m(final)
    if not base.valid:
        return {**row, "verdict": "baseline_invalid"}
    verdict = _verdict(r.key, final, base, min_gain)
    chosen = final if verdict == "faster" else base
    if final.valid and r.key:
        row["change"] = final.cycles / base.cycles - 1.0
        row["time_change"] = final.time_ms / base.time_ms - 1.0 if final.time_ms and base.time_ms else None
    row["verdict"] = verdict
    row["optimize"] = {"returned": "variant" if chosen is final and r.key else "baseline", **_speedups(base, chosen)}
    if beam > 1:
        cands, best, best_key = [], base, ()
        for key, logp in policy_beam(env.space(kernel), policy, beam, max_steps):
            c = {"set": list(key), "logp": round(logp, 4)}
            try:
                out = env.evaluate(kernel, [key])[0] if key else base
            except ChronosError as e:
                c["verdict"] = "unmeasured"
                c["error"] = " ".join(str(e).split())[:200]
                cands.append(c)
                continue
            c.update(_m(out), verdict=_verdict(key, out, base, min_gain))
            if out.valid and key:
                c["change"] = out.cycles / base.cycles - 1.0
            if c["verdict"] == "faster" and out.cycles < best.cycles:
                best, best_key = out, key
            cands.append(c)
        row["beam"] = cands
        row["optimize_beam"] = {"returned": "+".join(best_key) or "baseline", **_speedups(base, best),
                                "complete": all(c["verdict"] != "unmeasured" for c in cands)}
    return row


def _geomean(vals: list) -> float | None:
    vals = [v for v in vals if v]
    return math.exp(sum(map(math.log, vals)) / len(vals)) if vals else None


def summarize(rows: list[dict]) -> dict:
    done = [r for r in rows if "optimize" in r]

    def geomean(key):
        return _geomean([r["optimize"][key] for r in done])

    verdicts: dict[str, int] = {}
    for r in rows:
        verdicts[r["verdict"]] = verdicts.get(r["verdict"], 0) + 1
    return {"kernels": len(rows), "measured": len(done), "verdicts": dict(sorted(verdicts.items())),
            "geomean_speedup_cycles": geomean("speedup_cycles"), "geomean_speedup_time": geomean("speedup_time"),
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
            "geomean_speedup_cycles": _geomean([r["optimize_beam"]["speedup_cycles"] for r in done]),
            "geomean_speedup_time": _geomean([r["optimize_beam"]["speedup_time"] for r in done]),
            "faster": sum(r["optimize_beam"]["returned"] != "baseline" for r in done),
            "slower_in_time": sum((r["optimize_beam"]["speedup_time"] or 1.0) < 1.0 for r in done),
            "rejected_slower_in_time": sum(c["verdict"] == "slower_in_time" for c in cands),
            "candidates_measured": sum(c["verdict"] != "unmeasured" for c in cands),
            "wrong_outputs": sum(c["verdict"] == "invalid:wrong_output" for c in cands)}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--params", type=Path, default=Path("params.yaml"))
    ap.add_argument("--kernels", type=Path, default=Path("data/kernels"))
    ap.add_argument("--store", type=Path, default=Path("data/store/measurements.sqlite"))
    ap.add_argument("--checkpoint", type=Path, default=Path("models/checkpoint_best.pt"))
    ap.add_argument("--out", type=Path, default=Path("reports/measure_triton_results.json"))
    ap.add_argument("--backend", choices=("gpu", "replay", "auto"), help="overrides measure.backend")
    args = ap.parse_args(argv)
    torch.set_num_threads(1)
    params = yaml.safe_load(args.params.read_text()) or {}
    max_steps = int((params.get("predict") or {}).get("max_steps", 6))
    beam = int((params.get("predict") or {}).get("beam", 1))
    min_gain = float(((params.get("search") or {}).get("greedy") or {}).get("min_gain", 0.005))
    families = list(((params.get("search") or {}).get("triton") or {}).get("families", ["triton"]))
    try:
        from chronos.inference import load_model
        from chronos.measure.backend import make_backend
        from chronos.rl.env import EnvConfig, TransformEnv
        from chronos.stages.baseline import load_measure_params

        policy = load_model(args.checkpoint).eval()
        name, mcfg = load_measure_params(args.params)
        kernels = {s.kernel: (s, load_module(sj, s)) for _, sj, s in kernels_of(args.kernels, families)}
        backend = make_backend(args.backend or name, args.store, mcfg)
        try:
            env = TransformEnv(kernels, backend, EnvConfig(max_steps=max_steps))
            rows = []
            for kernel in kernels:
                row = evaluate_kernel(env, policy, kernel, max_steps, min_gain, beam)
                rows.append(row)
                ch = row.get("change")
                print(f"evaluate: {kernel:44s} {'+'.join(row['sequence']) or '(stop)':50s} "
                      f"{'' if ch is None else f'{100 * ch:+.1f}% '}{row['verdict']}", flush=True)
            prov = backend.provenance()
        finally:
            backend.close()
    except ChronosError as e:
        print(f"evaluate: error: {e}", file=sys.stderr)
        return 1
    summary = summarize(rows)
    out = {"provenance": {**prov, "checkpoint": str(args.checkpoint)}, "summary": summary, "kernels": rows}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(out, indent=1) + "\n")
    print(f"evaluate: {summary}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
