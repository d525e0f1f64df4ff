"""Stage `greedy_kernel`: greedy search on one kernel (one Snakemake job, `resources: gpu=1`;
a DVC matrix stage).

    python -m chronos.stages.greedy_kernel --params params.yaml --kernels data/kernels \
        --store data/store/measurements.sqlite --kernel gemm_tile_4_6_4 \
        --out data/search/greedy/gemm_tile_4_6_4.json

`--kernel` is an entry name (or `all`, which writes one part per kernel into the folder of --out, for a
single GPU where one process avoids 64 worker start-ups). Reads `search.greedy` and `measure`; every
measurement lands in the store as it is made; on replay nothing is measured. A part holds the backend's
provenance, the kernel's result and its demonstrations; `chronos.stages.greedy` merges them.
"""

from __future__ import annotations

import sys
from pathlib import Path

from chronos.errors import ChronosError
from chronos.search.runs import kernels_of, run_greedy
from chronos.stages.common import EXIT_OK, EXIT_PARTIAL, run_stage, write_json
from chronos.stages.measuring import add_backend_arguments, open_backend


def _arguments(ap) -> None:
    ap.add_argument("--kernels", type=Path, default=Path("data/kernels"))
    ap.add_argument("--kernel", required=True, help="an entry name, e.g. gemm_tile_4_6_4, or `all`")
    ap.add_argument("--out", type=Path, required=True,
                    help="the part file (with --kernel all: any file in the folder)")
    add_backend_arguments(ap)


def _body(args, cfg) -> int:
    gcfg = cfg.search.greedy
    entries = [s.entry for _, _, s in kernels_of(args.kernels, gcfg.families)]
    if args.kernel != "all" and args.kernel not in entries:
        raise ChronosError(f"no kernel {args.kernel!r} in {list(gcfg.families)} (e.g. {entries[0]})")
    backend = open_backend(args, cfg)
    try:
        only = None if args.kernel == "all" else f"^{args.kernel}$"
        results, demos = run_greedy(args.kernels, gcfg, backend, only=only, by_entry=True)
        prov = {**backend.provenance(), "backend": type(backend).__name__}
    finally:
        backend.close()
    folder = args.out.parent
    folder.mkdir(parents=True, exist_ok=True)
    failed = 0
    for result in results:
        entry = result["entry"]
        part = {"provenance": prov, "result": {k: v for k, v in result.items() if k != "entry"},
                "demos": [d for d in demos if d["kernel"] == result["kernel"]]}
        path = args.out if args.kernel != "all" else folder / f"{entry}.json"
        write_json(path, part, sort_keys=True)
        failed += "error" in result
    return EXIT_PARTIAL if failed else EXIT_OK


def main(argv: list[str] | None = None) -> int:
    return run_stage("greedy_kernel", __doc__, _arguments, _body, argv)


if __name__ == "__main__":
    sys.exit(main())
