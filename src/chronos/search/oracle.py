"""The exhaustive oracle from the measured atlas: per kernel its best valid variant and set, and the best
single action set over many kernels (what a policy that ignores the kernel could reach at best)."""

from __future__ import annotations

import math
import statistics
from collections import Counter
from pathlib import Path

from chronos.kernels.spec import KernelSpec, load_module
from chronos.kernels.variant import sha256_text
from chronos.ptx import emit
from chronos.search.atlas_plan import REFUSED, AtlasDB, actions_of


def root_sha(specs_json: Path, spec: KernelSpec) -> str:
    """sha256 of the kernel's PTX as the atlas plan saw it (emitted from the parsed module)."""
    return sha256_text(emit(load_module(specs_json, spec)))


def oracle_of(db: AtlasDB, spec: KernelSpec, root_ptx_sha: str) -> dict:
    """Baseline, best valid variant and its smallest action set, counts; `complete` says all were measured."""
    measured = db.measured(spec.kernel)
    sets = db.variant_sets(spec.kernel)
    variants = [v for v in sets if v != REFUSED]
    base_v = db.variant_of(spec.kernel, (), root_ptx_sha)
    missing = [v for v in variants if v not in measured]
    invalid = Counter(measured[v]["reason"] or "invalid" for v in variants
                      if v in measured and not measured[v]["valid"])
    out = {"kernel": spec.kernel, "sets": sum(len(m) for m in sets.values()), "variants": len(variants),
           "refused_sets": len(sets.get(REFUSED, [])), "measured": len(variants) - len(missing),
           "complete": not missing, "invalid": dict(sorted(invalid.items()))}
    base = measured.get(base_v)
    if not base or not base["valid"]:
        return {**out, "error": "baseline not measured or invalid"}
    valid = [(m["cycles_median"], v) for v, m in measured.items()
             if m["valid"] and m["cycles_median"] is not None]
    best_cycles, best_v = min(valid)
    best_sets = sorted((actions_of(m) for m in sets[best_v]), key=lambda a: (len(a), a))
    best = measured[best_v]

    def entry(m, actions):
        return {"cycles": m["cycles_median"], "cycles_iqr": m["cycles_iqr"], "time_ms": m["time_ms_median"],
                "time_ms_iqr": m["time_ms_iqr"], "actions": list(actions)}

    return {**out, "baseline": entry(base, ()), "best": entry(best, best_sets[0]),
            "best_sets": len(best_sets), "change": best_cycles / base["cycles_median"] - 1.0,
            "time_change": best["time_ms_median"] / base["time_ms_median"] - 1.0}


def best_fixed_set(db: AtlasDB, kernels: list[str]) -> dict | None:
    """The one action set with the highest mean log-gain over the kernels (legal and valid on all of them):
    what a policy that ignores the kernel could reach at best. Compared with the oracle's mean log-gain."""
    per = {k: db.set_cycles(k) for k in kernels}
    base = {k: per[k].get(0) for k in kernels}
    if not kernels or any(b is None for b in base.values()):
        return None
    common = set.intersection(*(set(c) for c in per.values()))
    score = {m: statistics.fmean(math.log(base[k] / per[k][m]) for k in kernels) for m in common}
    mask = max(sorted(score), key=score.__getitem__)
    oracle = statistics.fmean(math.log(base[k] / min(per[k].values())) for k in kernels)
    changes = [per[k][mask] / base[k] - 1.0 for k in kernels]
    return {"actions": list(actions_of(mask)), "mean_change": statistics.fmean(changes),
            "mean_log_gain": score[mask], "oracle_mean_log_gain": oracle,
            "fraction_of_oracle": score[mask] / oracle if oracle else None, "sets_compared": len(common)}
