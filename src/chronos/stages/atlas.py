"""Stage `atlas`: the exhaustive oracle. Measures (GPU) one representative of every SASS variant in the
atlas plan (chronos.search.atlas), then writes each kernel's oracle: its best valid variant and action set.

    python -m chronos.stages.atlas --params params.yaml --kernels data/kernels --atlas data/store/atlas.sqlite \
        --out reports/oracle.json [--kernel REGEX] [--backend gpu|replay] [--scratch-store PATH]

With the gpu backend, variants not yet measured are compiled on every CPU core (each compile process realises
its set itself) and measured by the worker pool, a few kernels per batch; each measurement goes into the
plan file's compact `measured` table as it is made (the full records, logs included, go to the scratch
store), so an interrupted run resumes. With replay, nothing is measured and a kernel with an unmeasured
variant is reported as incomplete. The oracle of a kernel is defined only when all its variants are measured.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from collections import Counter
from pathlib import Path

import yaml

from chronos.errors import ChronosError
from chronos.kernels.spec import KernelSpec, load_module
from chronos.measure.backend import GpuBackend
from chronos.measure.config import MeasureConfig, Variant, sha256_text
from chronos.ptx import emit
from chronos.search.atlas import REFUSED, AtlasDB, AtlasError, actions_of, now
from chronos.search.strategies import ExhaustiveConfig
from chronos.stages.baseline import load_measure_params
from chronos.stages.common import kernels_of


def load_atlas_params(params_path: Path) -> tuple[list[str], ExhaustiveConfig]:
    block = ((yaml.safe_load(params_path.read_text()) or {}).get("search") or {}).get("atlas") or {}
    return list(block.get("families", ["gemm_tile"])), ExhaustiveConfig(batch=int(block.get("batch", 256)))


def measure_missing(db: AtlasDB, selected: list[tuple[str, Path, KernelSpec]], backend: GpuBackend,
                    kernels_per_batch: int = 4, budget_s: float | None = None) -> None:
    """Measure every plan variant of the selected kernels that the plan file has no measurement for.
    With `budget_s`, no new batch starts after that many seconds (the rest is left for a later run)."""
    t_start = time.perf_counter()
    cfg = backend.config
    meta = db.meta()
    if meta.get("config_hash", cfg.config_hash()) != cfg.config_hash():
        raise AtlasError(f"{db.path} holds measurements of config {meta['config_hash']}, not {cfg.config_hash()}")
    prov = backend.provenance()
    db.set_meta(config_hash=cfg.config_hash(), config=json.dumps(cfg.measured(), sort_keys=True),
                gpu=prov["gpu"], driver=prov["driver"], measured_with_ptxas=prov["ptxas"])
    meta = db.meta()
    for start in range(0, len(selected), kernels_per_batch):
        if budget_s is not None and time.perf_counter() - t_start > budget_s:
            print(f"atlas: time budget of {budget_s:.0f} s spent; stopping before {selected[start][2].kernel}")
            break
        groups, index = [], []
        for _, specs_json, spec in selected[start: start + kernels_per_batch]:
            done = db.measured(spec.kernel)
            todo = [(v, acts) for v, acts in db.representatives(spec.kernel) if v not in done]
            if not todo:
                continue
            root_ptx = emit(load_module(specs_json, spec))
            groups.append((spec, [Variant(spec, "", acts, recipe=(str(specs_json), spec.entry)) for _, acts in todo],
                           root_ptx))
            index.append((spec, todo))
        if not groups:
            continue
        t0 = time.perf_counter()
        n = sum(len(t) for _, t in index)
        if "measured_first" not in meta:
            db.set_meta(measured_first=now())
            meta = db.meta()
        results = backend.measure_many(groups)
        for (spec, todo), records in zip(index, results, strict=True):
            rows = []
            for (v, acts), rec in zip(todo, records, strict=True):
                if rec.ptx_sha256:  # realised in the compile process: it must be the plan's PTX
                    try:
                        if db.variant_of(spec.kernel, acts, rec.ptx_sha256) != v:
                            raise AtlasError(f"{spec.kernel}: set {acts} is not variant {v} in the plan")
                    except AtlasError as e:
                        rec.valid, rec.reason, rec.log = False, "plan_mismatch", str(e)
                rows.append((v, rec.__dict__))
            db.record(spec.kernel, rows)
        dt = time.perf_counter() - t0
        db.set_meta(measured_last=now())
        print(f"atlas: measured {n} variants of {len(index)} kernels in {dt:.1f} s ({n / dt:.1f}/s)", flush=True)


def oracle_of(db: AtlasDB, spec: KernelSpec, root_ptx_sha: str) -> dict:
    """Baseline, best valid variant and its smallest action set, counts; `complete` says all were measured."""
    measured = db.measured(spec.kernel)
    sets = db.variant_sets(spec.kernel)
    variants = [v for v in sets if v != REFUSED]
    base_v = db.variant_of(spec.kernel, (), root_ptx_sha)
    missing = [v for v in variants if v not in measured]
    invalid = Counter(measured[v]["reason"] or "invalid" for v in variants if v in measured and not measured[v]["valid"])
    out = {"kernel": spec.kernel, "sets": sum(len(m) for m in sets.values()), "variants": len(variants),
           "refused_sets": len(sets.get(REFUSED, [])), "measured": len(variants) - len(missing),
           "complete": not missing, "invalid": dict(sorted(invalid.items()))}
    base = measured.get(base_v)
    if not base or not base["valid"]:
        return {**out, "error": "baseline not measured or invalid"}
    valid = [(m["cycles_median"], v) for v, m in measured.items() if m["valid"] and m["cycles_median"] is not None]
    best_cycles, best_v = min(valid)
    best_sets = sorted((actions_of(m) for m in sets[best_v]), key=lambda a: (len(a), a))
    best = measured[best_v]

    def entry(m, actions):
        return {"cycles": m["cycles_median"], "cycles_iqr": m["cycles_iqr"], "time_ms": m["time_ms_median"],
                "time_ms_iqr": m["time_ms_iqr"], "actions": list(actions)}

    return {**out, "baseline": entry(base, ()), "best": entry(best, best_sets[0]),
            "best_sets": len(best_sets), "change": best_cycles / base["cycles_median"] - 1.0,
            "time_change": best["time_ms_median"] / base["time_ms_median"] - 1.0}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--params", type=Path, default=Path("params.yaml"))
    ap.add_argument("--kernels", type=Path, default=Path("data/kernels"))
    ap.add_argument("--atlas", type=Path, default=Path("data/store/atlas.sqlite"))
    ap.add_argument("--out", type=Path, default=Path("reports/oracle.json"))
    ap.add_argument("--kernel", help="regex on kernel names (default: every kernel of the families)")
    ap.add_argument("--backend", choices=("gpu", "replay"), default="replay")
    ap.add_argument("--scratch-store", type=Path, default=Path("data/store/atlas_full.sqlite"),
                    help="full measurement records of the gpu backend (not committed)")
    ap.add_argument("--kernels-per-batch", type=int, default=4)
    ap.add_argument("--budget-s", type=float, help="start no new batch after this many seconds (gpu)")
    ap.add_argument("--only-planned", action="store_true", help="skip kernels the plan does not hold yet")
    args = ap.parse_args(argv)
    try:
        families, _ = load_atlas_params(args.params)
        _, mcfg = load_measure_params(args.params)
        selected = list(kernels_of(args.kernels, families, args.kernel))
        db = AtlasDB(args.atlas)
        if args.only_planned:
            selected = [t for t in selected if db.has(t[2].kernel)]
        missing = [s.kernel for _, _, s in selected if not db.has(s.kernel)]
        if missing:
            raise AtlasError(f"{len(missing)} kernels are not in the plan {args.atlas}, e.g. {missing[0]}",
                             repro=f"python -m chronos.stages.atlas_plan --out {args.atlas}")
        if args.backend == "gpu":
            with GpuBackend(args.scratch_store, mcfg) as backend:
                measure_missing(db, selected, backend, args.kernels_per_batch, args.budget_s)
        results = [oracle_of(db, spec, _root_sha(specs_json, spec)) for _, specs_json, spec in selected]
        write_oracle(args.out, db, results, mcfg, argv)
        for r in results:
            print(f"atlas: {r['kernel']}: " + (r.get("error") or f"{r['baseline']['cycles']:.0f} -> "
                  f"{r['best']['cycles']:.0f} cycles ({100 * r['change']:+.1f}%) {'+'.join(r['best']['actions'])} "
                  f"[{r['sets']} sets, {r['variants']} variants, invalid {r['invalid']}]"))
        db.close()
    except ChronosError as e:
        print(f"atlas: error: {e}", file=sys.stderr)
        return 1
    return 0 if all(r["complete"] and "error" not in r for r in results) else 1


def _root_sha(specs_json: Path, spec: KernelSpec) -> str:
    return sha256_text(emit(load_module(specs_json, spec)))


def best_fixed_set(db: AtlasDB, kernels: list[str]) -> dict | None:
    """The one action set with the highest mean log-gain over the kernels (legal and valid on all of them):
    what a policy that ignores the kernel could reach at best. Compared with the oracle's mean log-gain."""
    import math

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


def write_oracle(path: Path, db: AtlasDB, results: list[dict], cfg: MeasureConfig, argv) -> None:
    import shlex

    meta = db.meta()
    ok = [r for r in results if "error" not in r and r["complete"]]
    changes = [r["change"] for r in ok]
    summary = {"kernels": len(results), "complete": len(ok),
               "mean_change": statistics.fmean(changes) if changes else None,
               "median_change": statistics.median(changes) if changes else None,
               "sets": sum(r["sets"] for r in results), "variants": sum(r["variants"] for r in results),
               "refused_sets": sum(r["refused_sets"] for r in results),
               "invalid": dict(sum((Counter(r["invalid"]) for r in results), Counter())),
               "distinct_best_sets": len({tuple(r["best"]["actions"]) for r in ok}),
               "best_fixed_set": best_fixed_set(db, [r["kernel"] for r in ok])}
    prov = {"gpu": meta.get("gpu"), "driver": meta.get("driver"), "ptxas": meta.get("ptxas"),
            "arch": meta.get("arch"), "config_hash": meta.get("config_hash"), "plan_command": meta.get("command"),
            "measured": {"first": meta.get("measured_first"), "last": meta.get("measured_last")},
            "date": meta.get("measured_last"),
            "command": shlex.join(["python", "-m", "chronos.stages.atlas",
                                   *(argv if argv is not None else sys.argv[1:])])}
    if meta.get("config_hash") not in (None, cfg.config_hash()):
        raise AtlasError(f"the atlas was measured with config {meta['config_hash']}, params.yaml gives "
                         f"{cfg.config_hash()}")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"provenance": prov, "summary": summary, "kernels": results}, indent=1) + "\n")


if __name__ == "__main__":
    sys.exit(main())
