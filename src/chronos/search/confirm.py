"""Confirmation: a kernel's contenders (the baseline, the atlas's best variants, the best fixed set, greedy's
and the policy's sets) re-measured side by side, and the summary that compares them on those numbers.

The atlas's oracle is the minimum over thousands of per-variant medians, each measured once, so it is biased
low (the winner's curse); measured together, in interleaved rounds on one allocation, the contenders are
compared free of run-to-run drift.
"""

from __future__ import annotations

import math
import time
from pathlib import Path

from chronos.config import ConfirmConfig, MeasureConfig
from chronos.kernels.spec import load_module
from chronos.measure.backend import GpuBackend
from chronos.measure.compile import compile_variant
from chronos.ptx import emit
from chronos.search.atlas_plan import AtlasDB, mask_of
from chronos.search.base import Outcome, clearly_faster
from chronos.search.space import realize_recipe

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


def measure_contenders(selected: list, db: AtlasDB, contenders: dict, mcfg: MeasureConfig,
                       ccfg: ConfirmConfig, scratch: Path, command: str) -> dict:
    """Per selected (family, specs.json, spec) kernel, the contenders (`contenders`: "fixed" set, "greedy"
    and "policy" {kernel: set}) and the atlas's top variants compiled, then measured side by side on the GPU
    (`GpuBackend.measure_rounds`: verification, then interleaved rounds on one allocation)."""
    top, rounds, realloc = ccfg.top, ccfg.rounds, ccfg.realloc
    fixed, greedy, policy = contenders["fixed"], contenders["greedy"], contenders["policy"]
    t0 = time.perf_counter()
    with GpuBackend(scratch, mcfg) as backend:
        ex, futs = backend.executor, []
        for _, specs_json, spec in selected:
            cands = _sets_by_source(spec.kernel, db, top, fixed, greedy, policy)
            root = emit(load_module(specs_json, spec))
            base = ex.submit(compile_variant, root, spec, mcfg.arch, backend.ptxas, False)
            comps = [ex.submit(compile_variant, "", spec, mcfg.arch, backend.ptxas, True,
                               ((str(specs_json), spec.entry), tuple(c["actions"])), realize_recipe)
                     for c in cands.values()]
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
    return {"provenance": {**prov, "config_hash": mcfg.config_hash(), "rounds": rounds, "top": top,
                           "realloc": realloc, "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                           "seconds": round(time.perf_counter() - t0, 1),
                           "compile_seconds": round(compiled_s, 1), "command": command},
            "kernels": kernels}


def _outcome(c: dict) -> Outcome:
    return Outcome(tuple(c["actions"]), c["valid"], cycles=c["cycles"]["median"],
                   cycles_iqr=c["cycles"]["iqr"])


def summarize(data: dict, heldout: set[str], policy: dict[str, list[str]], min_gain: float,
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
        row = {"kernel": k["kernel"], "split": "heldout" if k["kernel"] in heldout else "train",
               "baseline": b}
        best = min(ok, key=lambda c: c["cycles"]["median"])
        row["oracle"] = {"actions": best["actions"], "change": best["cycles"]["median"] / b - 1,
                         "iqr": best["cycles"]["iqr"] / b}
        fixed = next((c for c in ok if "fixed" in c["labels"]), None)
        if fixed is not None:  # does this kernel need a set of its own? (the search's own test of a gain)
            row["beats_fixed_set"] = clearly_faster(_outcome(best), _outcome(fixed), min_gain)
        for who in CONTENDERS:
            c = next((c for c in ok if who in c["labels"]), None)
            # the committed policy's set: the candidate with its SASS (atlas variant) or, lacking one, its set
            if who == "policy" and k["kernel"] in policy:
                acts = policy[k["kernel"]]
                v = variant_of(k["kernel"], acts) if variant_of else None
                c = next((c for c in ok if (c.get("variant") == v if v is not None
                                            else mask_of(c["actions"]) == mask_of(acts))), None)
            row[who] = None if c is None else {"actions": c["actions"],
                                               "change": c["cycles"]["median"] / b - 1,
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
