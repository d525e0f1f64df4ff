"""Stage `captured`: the real-workload corpus (issue #13) summarised from what the H200 runs recorded.

    python -m chronos.stages.captured --params params.yaml --captured data/kernels/captured \
        --out reports/captured.json

Per workload folder (written by `chronos capture`, see workflow/captured/Snakefile): capture.json (kernels,
distinct PTX, launches, what could not be mapped), profile.json (Triton's share of GPU time per phase, the
Amdahl bound it sets on any end-to-end gain: at 2x, and at the tune's geomean, as if every kernel gained
that), and when they exist the tune parts (tune-parts/*.json: per kernel verdicts in time) and e2e.json
(step time stock vs tuned, outputs compared bitwise, per tensor where stock differs from itself); with
`--tune`, stage tune_captured's replay of those parts (how many the store reproduced, how many the record
lacks).
Nothing is measured here: the numbers are the committed records', so CPU replay reproduces the report byte
for byte.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from chronos.report.captured import library_summary, workload_summary
from chronos.stages.common import read_json, run_stage, write_json


def _arguments(ap) -> None:
    ap.add_argument("--captured", type=Path, default=Path("data/kernels/captured"))
    ap.add_argument("--out", type=Path, default=Path("reports/captured.json"))
    ap.add_argument("--tune", type=Path, help="stage tune_captured's output (reports/tune_captured.json)")
    ap.add_argument("--library", type=Path,
                    help="hand-written Triton libraries run as acceptance tests (data/library/<name>: a "
                         "capture, its tune parts, acceptance.json: its own tests stock and deployed)")


def _body(args, cfg) -> None:
    replayed = read_json(args.tune, "tune replay")["workloads"] if args.tune else {}
    workloads = {d.name: workload_summary(d, replayed.get(d.name)) for d in sorted(args.captured.iterdir())
                 if (d / "capture.json").is_file()}
    libraries = ({d.name: library_summary(d) for d in sorted(args.library.iterdir())
                  if (d / "acceptance.json").is_file()} if args.library else {})
    report = {"workloads": workloads, **({"libraries": libraries} if libraries else {}),
              "total": {"workloads": len(workloads),
                        "kernels": sum(w["kernels"] for w in workloads.values()),
                        "distinct_ptx": sum(w["distinct_ptx"] for w in workloads.values())}}
    write_json(args.out, report, indent=1, sort_keys=True)
    print(f"captured: {json.dumps(report['total'])}")


def main(argv: list[str] | None = None) -> int:
    return run_stage("captured", __doc__, _arguments, _body, argv)


if __name__ == "__main__":
    sys.exit(main())
