"""Stage `confirm`: the contenders of every gemm_tile kernel re-measured side by side, so that the oracle,
greedy, the best fixed set and the policy are compared on numbers taken together rather than hours apart.

    (GPU) python -m chronos.stages.confirm --measure --params params.yaml --out-data data/confirm/gemm_tile.json
    (any) python -m chronos.stages.confirm --params params.yaml --data data/confirm/gemm_tile.json \
              --out reports/confirm.json

Why: the atlas's oracle is the minimum over thousands of per-variant medians, each measured once, so it is
biased low (the winner's curse), and measurements of one variant taken in separate runs differ by ~1% at the
median and several % in the tail (issue #4; benchmarks/bench_repeat_protocol.py). Per kernel, `--measure`
takes the baseline, the atlas's `confirm.top` best SASS variants, the best fixed set, greedy's and the
policy's final sets, deduplicated by SASS variant, and measures them together with
`GpuRunner.measure_rounds` (bit-exact verification, then `confirm.rounds` interleaved rounds on one set of
buffers). Without `--measure` it summarises the committed data: per split, the mean cycle change of each
contender, the confirmed oracle (the best confirmed candidate) and the policy's share of its mean log-gain.
The policy's set counts as confirmed when a measured candidate has its SASS (the atlas's variant of that
set: a `.maxnreg 255` ptxas never needed changes nothing), else it is `unconfirmed` (a policy retrained
since the measurement).
"""

from __future__ import annotations

import argparse
import json
import math
import shlex
import sys
import time
from pathlib import Path

import yaml

from chronos.search.atlas import AtlasDB, mask_of
from chronos.search.base import Outcome, clearly_faster

CONTENDERS = ("fixed", "greedy", "policy")


def _sets_by_source(kernel: str, db: AtlasDB, top: int, fixed: tuple, greedy: dict, policy: dict) -> dict:
    """variant id -> {"actions", "labels"}: the baseline, the atlas's top-N and the contenders' sets."""
    measured = db.measured(kernel)
    by_mask = db.set_variants(kernel)
    reps = dict(db.representatives(kernel))
    out: dict[int, dict] = {}

    def label(v, name):
        out.setdefault(v, {"actions": list(reps[v]), "labels": []})["labels"].append(name)

    def add(actions, name):
        if (v := by_mask.get(mask_of(actions))) is not None:
            label(v, name)

    add((), "baseline")
    ranked = sorted((m["cycles_median"], v) for v, m in measured.items() if m["valid"] and m["cycles_median"])
    for i, (_, v) in enumerate(ranked[:top]):
        label(v, f"atlas_top{i + 1}")
    add(fixed, "fixed")
    add(tuple(greedy.get(kernel, ())), "greedy")
    add(tuple(policy.get(kernel, ())), "policy")
    return out


def measure(args, params: dict) -> dict:
    from chronos.kernels.spec import load_module
    from chronos.measure.backend import GpuBackend, compile_variant
    from chronos.ptx import emit
    from chronos.stages.baseline import load_measure_params
    from chronos.stages.common import kernels_of

    cfg_c = params.get("confirm") or {}
    top, rounds = int(cfg_c.get("top", 4)), int(cfg_c.get("rounds", 8))
    realloc = bool(cfg_c.get("realloc", False)) if args.realloc is None else args.realloc
    _, mcfg = load_measure_params(args.params)
    db = AtlasDB(args.atlas)
    fixed = tuple(json.loads(args.oracle.read_text())["summary"]["best_fixed_set"]["actions"])
    greedy = {k["kernel"]: k["best"]["actions"] for k in json.loads(args.greedy.read_text())["kernels"] if "best" in k}
    policy = {k["kernel"]: k["final_set"] for k in json.loads(args.training.read_text())["kernels"]}
    selected = list(kernels_of(args.kernels, ["gemm_tile"], args.only))
    t0 = time.perf_counter()
    with GpuBackend(args.scratch, mcfg) as backend:
        ex, futs = backend.executor, []
        for _, specs_json, spec in selected:
            cands = _sets_by_source(spec.kernel, db, top, fixed, greedy, policy)
            root = emit(load_module(specs_json, spec))
            base = ex.submit(compile_variant, root, spec, mcfg.arch, backend.ptxas, False)
            comps = [ex.submit(compile_variant, "", spec, mcfg.arch, backend.ptxas, True,
                               ((str(specs_json), spec.entry), tuple(c["actions"]))) for c in cands.values()]
            futs.append((spec, cands, base, comps))
        groups, index = [], []
        for spec, cands, base, comps in futs:
            comps = [f.result() for f in comps]
            groups.append((spec, base.result(), comps))
            index.append((spec.kernel, cands, comps))
        compiled_s = time.perf_counter() - t0
        answers = backend.measure_rounds(groups, rounds, realloc)
        prov = backend.provenance()
    kernels = []
    for (kernel, cands, comps), ans in zip(index, answers, strict=True):
        rows = []
        for (v, c), comp, a in zip(cands.items(), comps, ans, strict=True):
            rows.append({"variant": v, **c, "cubin_sha256": comp.sha, "valid": a.get("valid", False),
                         "reason": a.get("reason", ""), "log": a.get("log", "")[:300],
                         "cycles": a.get("cycles"), "time_ms": a.get("time_ms")})
        kernels.append({"kernel": kernel, "candidates": rows})
    return {"provenance": {**prov, "config_hash": mcfg.config_hash(), "rounds": rounds, "top": top, "realloc": realloc,
                           "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                           "seconds": round(time.perf_counter() - t0, 1), "compile_seconds": round(compiled_s, 1),
                           "command": shlex.join(["python", "-m", "chronos.stages.confirm", *sys.argv[1:]])},
            "kernels": kernels}


def _outcome(c: dict) -> Outcome:
    return Outcome(tuple(c["actions"]), c["valid"], cycles=c["cycles"]["median"], cycles_iqr=c["cycles"]["iqr"])


def summarize(data: dict, heldout: set[str], policy: dict[str, list[str]], min_gain: float = 0.005,
              variant_of=None) -> dict:
    """Per split: mean cycle change of each contender and of the confirmed oracle; the policy's share of
    the confirmed oracle's mean log-gain; kernels where a contender is unconfirmed are counted, not guessed.
    `kernels_beating_fixed_set`: kernels whose best confirmed candidate is clearly faster than the best fixed
    set (IQR bands apart and at least `min_gain`): those that need a kernel-specific choice at all."""
    per_kernel = []
    for k in data["kernels"]:
        ok = [c for c in k["candidates"] if c["valid"] and c.get("cycles")]
        base = next((c for c in ok if "baseline" in c["labels"]), None)
        if base is None:
            per_kernel.append({"kernel": k["kernel"], "error": "baseline not measured"})
            continue
        b = base["cycles"]["median"]
        row = {"kernel": k["kernel"], "split": "heldout" if k["kernel"] in heldout else "train", "baseline": b}
        best = min(ok, key=lambda c: c["cycles"]["median"])
        row["oracle"] = {"actions": best["actions"], "change": best["cycles"]["median"] / b - 1,
                         "iqr": best["cycles"]["iqr"] / b}
        fixed = next((c for c in ok if "fixed" in c["labels"]), None)
        if fixed is not None:  # does this kernel need a set of its own? (the search's own test of a gain)
            row["beats_fixed_set"] = clearly_faster(_outcome(best), _outcome(fixed), min_gain)
        for who in CONTENDERS:
            c = next((c for c in ok if who in c["labels"]), None)
            if who == "policy" and k["kernel"] in policy:  # the committed policy's set: the candidate with
                acts = policy[k["kernel"]]                      # its SASS (atlas variant) or, lacking one, its set
                v = variant_of(k["kernel"], acts) if variant_of else None
                c = next((c for c in ok if (c.get("variant") == v if v is not None
                                            else mask_of(c["actions"]) == mask_of(acts))), None)
            row[who] = None if c is None else {"actions": c["actions"], "change": c["cycles"]["median"] / b - 1,
                                               "iqr": c["cycles"]["iqr"] / b}
        per_kernel.append(row)
    summary = {}
    for split in ("train", "heldout", "all"):
        rows = [r for r in per_kernel if "error" not in r and (split == "all" or r["split"] == split)]
        s = {"kernels": len(rows)}
        for who in ("oracle", *CONTENDERS):
            got = [r[who]["change"] for r in rows if r.get(who)]
            s[f"{who}_mean_change"] = sum(got) / len(got) if got else None
            s[f"{who}_unconfirmed"] = len(rows) - len(got)
        both = [r for r in rows if r.get("policy")]
        gain = lambda r, who: -math.log1p(r[who]["change"])  # log(before/after)
        og = sum(gain(r, "oracle") for r in both)
        s["policy_oracle_fraction"] = sum(gain(r, "policy") for r in both) / og if og > 0 else None
        s["distinct_oracle_sets"] = len({tuple(r["oracle"]["actions"]) for r in rows})
        s["kernels_beating_fixed_set"] = sorted(r["kernel"] for r in rows if r.get("beats_fixed_set"))
        summary[split] = s
    return {"provenance": data["provenance"], "summary": summary, "kernels": per_kernel}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--params", type=Path, default=Path("params.yaml"))
    ap.add_argument("--measure", action="store_true", help="measure on the GPU and write --out-data")
    ap.add_argument("--kernels", type=Path, default=Path("data/kernels"))
    ap.add_argument("--only", help="regex on kernel names (with --measure)")
    ap.add_argument("--realloc", action=argparse.BooleanOptionalAction, default=None,
                    help="fresh buffers every round (overrides confirm.realloc)")
    ap.add_argument("--atlas", type=Path, default=Path("data/store/atlas.sqlite"))
    ap.add_argument("--oracle", type=Path, default=Path("reports/oracle.json"))
    ap.add_argument("--greedy", type=Path, default=Path("reports/greedy_results.json"))
    ap.add_argument("--training", type=Path, default=Path("reports/training_result.json"))
    ap.add_argument("--scratch", type=Path, default=Path("/tmp/chronos_confirm_store.sqlite"))
    ap.add_argument("--out-data", type=Path, default=Path("data/confirm/gemm_tile.json"))
    ap.add_argument("--data", type=Path, default=Path("data/confirm/gemm_tile.json"))
    ap.add_argument("--out", type=Path, default=Path("reports/confirm.json"))
    args = ap.parse_args(argv)
    params = yaml.safe_load(args.params.read_text()) or {}
    if args.measure:
        data = measure(args, params)
        args.out_data.parent.mkdir(parents=True, exist_ok=True)
        args.out_data.write_text(json.dumps(data, indent=1) + "\n")
        print(f"confirm: {len(data['kernels'])} kernels measured in {data['provenance']['seconds']} s -> {args.out_data}")
        return 0
    heldout = set((params.get("split") or {}).get("heldout_kernels", []))
    policy = {k["kernel"]: k["final_set"] for k in json.loads(args.training.read_text())["kernels"]}
    min_gain = float(((params.get("search") or {}).get("greedy") or {}).get("min_gain", 0.005))
    db = AtlasDB(args.atlas)
    masks = {}

    def variant_of(kernel: str, actions) -> int | None:  # the atlas's SASS variant of a set
        if kernel not in masks:
            masks[kernel] = db.set_variants(kernel) if db.has(kernel) else {}
        return masks[kernel].get(mask_of(actions))

    out = summarize(json.loads(args.data.read_text()), heldout, policy, min_gain, variant_of)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(out, indent=1) + "\n")
    print(f"confirm: {json.dumps(out['summary'])}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
