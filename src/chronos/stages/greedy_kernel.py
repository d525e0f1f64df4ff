"""Stage `greedy_kernel`: greedy search on one kernel (one Snakemake job, `resources: gpu=1`; a DVC matrix stage).

    python -m chronos.stages.greedy_kernel --params params.yaml --kernels data/kernels \
        --store data/store/measurements.sqlite --kernel gemm_tile_4_6_4 --out data/search/greedy/gemm_tile_4_6_4.json

`--kernel` is an entry name (or `all`, which writes one part per kernel into the folder of --out, for a
single GPU where one process avoids 64 worker start-ups). Reads `search.greedy` and `measure`; every
measurement lands in the store as it is made; on replay nothing is measured. A part holds the backend's
provenance, the kernel's result and its demonstrations; `chronos.stages.greedy` merges them.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from chronos.errors import ChronosError
from chronos.measure.backend import make_backend
from chronos.stages.baseline import load_measure_params
from chronos.stages.common import kernels_of
from chronos.stages.greedy import load_greedy_params, run


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--params", type=Path, default=Path("params.yaml"))
    ap.add_argument("--kernels", type=Path, default=Path("data/kernels"))
    ap.add_argument("--store", type=Path, default=Path("data/store/measurements.sqlite"))
    ap.add_argument("--kernel", required=True, help="an entry name, e.g. gemm_tile_4_6_4, or `all`")
    ap.add_argument("--out", type=Path, required=True, help="the part file (with --kernel all: any file in the folder)")
    ap.add_argument("--backend", choices=("gpu", "replay", "auto"), help="overrides measure.backend")
    args = ap.parse_args(argv)
    try:
        families, cfg = load_greedy_params(args.params)
        entries = [s.entry for _, _, s in kernels_of(args.kernels, families)]
        if args.kernel != "all" and args.kernel not in entries:
            raise ChronosError(f"greedy_kernel: no kernel {args.kernel!r} in {families} (e.g. {entries[0]})")
        name, mcfg = load_measure_params(args.params)
        backend = make_backend(args.backend or name, args.store, mcfg)
        try:
            only = None if args.kernel == "all" else f"^{args.kernel}$"
            results, demos = run(args.kernels, families, cfg, backend, only=only, by_entry=True)
            prov = {**backend.provenance(), "backend": type(backend).__name__}
        finally:
            backend.close()
    except ChronosError as e:
        print(f"greedy_kernel: error: {e}", file=sys.stderr)
        return 1
    folder = args.out.parent
    folder.mkdir(parents=True, exist_ok=True)
    failed = 0
    for result in results:
        entry = result["entry"]
        part = {"provenance": prov, "result": {k: v for k, v in result.items() if k != "entry"},
                "demos": [d for d in demos if d["kernel"] == result["kernel"]]}
        path = args.out if args.kernel != "all" else folder / f"{entry}.json"
        path.write_text(json.dumps(part, indent=1, sort_keys=True) + "\n")
        failed += "error" in result
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
