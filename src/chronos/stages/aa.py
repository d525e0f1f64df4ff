"""Stage `aa`: the A/A test of the time verdicts. Every suite kernel's baseline is compared, through the real
decision path (backend.compare, Comparison.verdict), with copies of itself: its PTX file as committed (a
different text, the same machine code) and `copies - 1` further loads of the re-emitted PTX. Each copy is a
decision; any verdict other than `no_difference` is false.

    python -m chronos.stages.aa --params params.yaml --kernels data/kernels \
        --store data/store/measurements.sqlite --out reports/aa.json [--backend gpu|replay|auto] [--copies 8]

The gate (issue #12): at least 500 decisions, false `faster` and false `slower` each at most 1%.
"""

from __future__ import annotations

import sys
from pathlib import Path

from chronos.errors import ChronosError, one_line
from chronos.measure.aa import aa_kernel, aa_summary
from chronos.progress import progress
from chronos.search.runs import kernels_of
from chronos.stages.common import run_stage, write_json
from chronos.stages.measuring import add_backend_arguments, open_backend


def _arguments(ap) -> None:
    ap.add_argument("--kernels", type=Path, default=Path("data/kernels"))
    ap.add_argument("--out", type=Path, default=Path("reports/aa.json"))
    ap.add_argument("--copies", type=int, default=8, help="copies of the baseline per kernel (decisions)")
    add_backend_arguments(ap)


def _body(args, cfg) -> int:
    families = cfg.search.triton.families
    rows = []
    backend = open_backend(args, cfg)
    try:
        for family, specs_json, spec in progress(list(kernels_of(args.kernels, families)), desc="A/A",
                                                 unit="kernel"):
            try:
                row = {"family": family, **aa_kernel(spec, specs_json, backend, cfg.timing,
                                                    cfg.search.greedy.min_gain, args.copies)}
            except ChronosError as e:
                row = {"family": family, "kernel": spec.kernel, "error": one_line(e, 400)}
            rows.append(row)
            bad = [c["verdict"] for c in row.get("copies", []) if c["verdict"] != "no_difference"]
            said = row.get("error", "")[:120] or f"{len(bad)} false: {bad}"
            print(f"aa: {spec.kernel:44s} {said}", flush=True)
        prov = backend.provenance()
    finally:
        backend.close()
    out = {"provenance": prov, "params": {"copies": args.copies, "min_gain": cfg.search.greedy.min_gain,
                                         "timing": cfg.timing.to_json()},
           "summary": aa_summary(rows), "kernels": rows}
    write_json(args.out, out)
    print(f"aa: {out['summary']}")
    return 0


def main(argv: list[str] | None = None) -> int:
    return run_stage("aa", __doc__, _arguments, _body, argv)


if __name__ == "__main__":
    sys.exit(main())
