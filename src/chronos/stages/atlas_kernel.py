"""Stage `atlas_kernel` (GPU; not in the pipeline until its records exist): every legal action set of one
kernel, realised in canonical order and measured (identical SASS measured once), giving that kernel's oracle.

    python -m chronos.stages.atlas_kernel --params params.yaml --kernels data/kernels \
        --store data/store/measurements.sqlite --kernel gemm_tile_4_6_4 --out data/search/atlas/gemm_tile_4_6_4.json

`--kernel all` writes one part per kernel into the folder of --out. Reads `measure` and `search.atlas`
(families, batch). Register budgets are not pre-checked with ptxas: a refused budget is recorded as an
invalid variant ("ptxas_error"). Every measurement lands in the store as it is made, so an interrupted run
resumes where it stopped. A part holds the backend's provenance and the kernel's SearchResult (baseline,
oracle best and its action set, sets measured, unique cubins, invalid counts by reason).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import yaml

from chronos.errors import ChronosError
from chronos.kernels.spec import load_module
from chronos.measure.backend import make_backend
from chronos.search import run as run_search
from chronos.search.strategies import ExhaustiveConfig
from chronos.stages.baseline import load_measure_params
from chronos.stages.common import kernels_of


def load_atlas_params(params_path: Path) -> tuple[list[str], ExhaustiveConfig]:
    block = ((yaml.safe_load(params_path.read_text()) or {}).get("search") or {}).get("atlas") or {}
    return list(block.get("families", ["gemm_tile"])), ExhaustiveConfig(batch=int(block.get("batch", 256)))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--params", type=Path, default=Path("params.yaml"))
    ap.add_argument("--kernels", type=Path, default=Path("data/kernels"))
    ap.add_argument("--store", type=Path, default=Path("data/store/measurements.sqlite"))
    ap.add_argument("--kernel", required=True, help="an entry name, e.g. gemm_tile_4_6_4, or `all`")
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--backend", choices=("gpu", "replay", "auto"), help="overrides measure.backend")
    args = ap.parse_args(argv)
    failed = 0
    try:
        families, cfg = load_atlas_params(args.params)
        name, mcfg = load_measure_params(args.params)
        only = None if args.kernel == "all" else f"^{args.kernel}$"
        selected = list(kernels_of(args.kernels, families, only, by_entry=True))
        if not selected:
            raise ChronosError(f"atlas_kernel: no kernel {args.kernel!r} in {families}")
        backend = make_backend(args.backend or name, args.store, mcfg)
        try:
            for family, specs_json, spec in selected:
                t0 = time.perf_counter()
                try:
                    res = run_search("exhaustive", spec, load_module(specs_json, spec), backend, cfg)
                    result = {**res.to_json(), "family": family, "sequence": list(res.best.actions)}
                except (ChronosError, RuntimeError) as e:  # this kernel's failure is recorded; the run goes on
                    result = {"kernel": spec.kernel, "family": family, "error": str(e)}
                    failed += 1
                part = {"provenance": {**backend.provenance(), "backend": type(backend).__name__},
                        "result": result}
                path = args.out if args.kernel != "all" else args.out.parent / f"{spec.entry}.json"
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_text(json.dumps(part, indent=1, sort_keys=True) + "\n")
                print(f"atlas: {spec.kernel}: {result.get('error') or _line(result)} "
                      f"({time.perf_counter() - t0:.1f} s)")
        finally:
            backend.close()
    except ChronosError as e:
        print(f"atlas_kernel: error: {e}", file=sys.stderr)
        return 1
    return 1 if failed else 0


def _line(r: dict) -> str:
    return (f"{r['baseline']['cycles']:.0f} -> {r['best']['cycles']:.0f} cycles ({100 * r['change']:+.1f}%) "
            f"{'+'.join(r['sequence']) or '-'} [{r['evaluated']} sets, {r['unique_cubins']} cubins, "
            f"invalid {r['invalid']}]")


if __name__ == "__main__":
    sys.exit(main())
