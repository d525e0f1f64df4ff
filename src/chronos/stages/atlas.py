"""Stage `atlas`: the exhaustive oracle. Measures (GPU) one representative of every SASS variant in the
atlas plan (chronos.search.atlas_plan), then writes each kernel's oracle: its best valid variant and set.

    python -m chronos.stages.atlas --params params.yaml --kernels data/kernels \
        --atlas data/store/atlas.sqlite \
        --out reports/oracle.json [--kernel REGEX] [--backend gpu|replay] [--scratch-store PATH]

With the gpu backend, variants not yet measured are compiled on every CPU core (each compile process realises
its set itself) and measured by the worker pool, a few kernels per batch; each measurement goes into the
plan file's compact `measured` table as it is made (the full records, logs included, go to the scratch
store), so an interrupted run resumes. With replay, nothing is measured and a kernel with an unmeasured
variant is reported as incomplete. The oracle of a kernel is defined only when all its variants are measured.
"""

from __future__ import annotations

import statistics
import sys
from collections import Counter
from pathlib import Path

from chronos.config import MeasureConfig
from chronos.errors import AtlasError
from chronos.measure.backend import GpuBackend
from chronos.search.atlas_measure import measure_missing
from chronos.search.atlas_plan import AtlasDB
from chronos.search.oracle import best_fixed_set, oracle_of, root_sha
from chronos.search.runs import kernels_of
from chronos.search.space import realize_recipe
from chronos.stages.common import EXIT_OK, EXIT_PARTIAL, command_line, run_stage, write_json


def _arguments(ap) -> None:
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


def _body(args, cfg) -> int:
    selected = list(kernels_of(args.kernels, cfg.search.atlas.families, args.kernel))
    db = AtlasDB(args.atlas)
    try:
        if args.only_planned:
            selected = [t for t in selected if db.has(t[2].kernel)]
        missing = [s.kernel for _, _, s in selected if not db.has(s.kernel)]
        if missing:
            raise AtlasError(f"{len(missing)} kernels are not in the plan {args.atlas}, e.g. {missing[0]}",
                             repro=f"python -m chronos.stages.atlas_plan --out {args.atlas}")
        if args.backend == "gpu":
            with GpuBackend(args.scratch_store, cfg.measure, realize=realize_recipe) as backend:
                measure_missing(db, selected, backend, args.kernels_per_batch, args.budget_s)
        results = [oracle_of(db, spec, root_sha(specs_json, spec)) for _, specs_json, spec in selected]
        write_oracle(args.out, db, results, cfg.measure, args.argv)
    finally:
        db.close()
    for r in results:
        print(f"atlas: {r['kernel']}: " + (r.get("error") or f"{r['baseline']['cycles']:.0f} -> "
              f"{r['best']['cycles']:.0f} cycles ({100 * r['change']:+.1f}%) "
              f"{'+'.join(r['best']['actions'])} "
              f"[{r['sets']} sets, {r['variants']} variants, invalid {r['invalid']}]"))
    return EXIT_OK if all(r["complete"] and "error" not in r for r in results) else EXIT_PARTIAL


def write_oracle(path: Path, db: AtlasDB, results: list[dict], cfg: MeasureConfig, argv: list[str]) -> None:
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
            "arch": meta.get("arch"), "config_hash": meta.get("config_hash"),
            "plan_command": meta.get("command"),
            "measured": {"first": meta.get("measured_first"), "last": meta.get("measured_last")},
            "date": meta.get("measured_last"),
            "command": command_line("atlas", argv)}
    if meta.get("config_hash") not in (None, cfg.config_hash()):
        raise AtlasError(f"the atlas was measured with config {meta['config_hash']}, params.yaml gives "
                         f"{cfg.config_hash()}")
    write_json(path, {"provenance": prov, "summary": summary, "kernels": results})




def main(argv: list[str] | None = None) -> int:
    return run_stage("atlas", __doc__, _arguments, _body, argv)


if __name__ == "__main__":
    sys.exit(main())
