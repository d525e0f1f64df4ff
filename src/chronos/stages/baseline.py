"""Stage `baseline`: measure (or replay) the untransformed kernel of every spec in data/kernels/*/specs.json.

    python -m chronos.stages.baseline --params params.yaml --kernels data/kernels \
        --store data/store/measurements.sqlite --out reports/baseline.json

Reads the `measure:` block of params.yaml (backend: gpu | replay | auto, and MeasureConfig's knobs).
Writes {"provenance": {"gpu", "driver", "ptxas", "date", "command", "config_hash", "config"},
"kernels": [{"kernel", "family", "cycles": {"median", "iqr"}, "time_ms": {"median", "iqr"}, "registers",
"spills", "valid", "reason", "ptx_sha256", "cubin_sha256"}, ...]}. Every measurement goes to the store
as it is made, so a rerun resumes (kernels already measured are answered from the store).
"""

from __future__ import annotations

import re
import sys
import time
from pathlib import Path

from chronos.kernels.spec import load_specs, read_ptx
from chronos.kernels.variant import Variant
from chronos.stages.common import command_line, run_stage, write_json
from chronos.stages.measuring import add_backend_arguments, open_backend


def kernel_entry(spec, rec) -> dict:
    return {"kernel": spec.kernel, "family": spec.family,
            "cycles": {"median": rec.cycles_median, "iqr": rec.cycles_iqr},
            "time_ms": {"median": rec.time_ms_median, "iqr": rec.time_ms_iqr},
            "registers": rec.registers, "spills": rec.spills, "valid": rec.valid, "reason": rec.reason,
            "ptx_sha256": rec.ptx_sha256, "cubin_sha256": rec.cubin_sha256, "measured_at": rec.created_at}


FAMILIES = ("gemm_tile", "triton")
"""The families with per-variant records (%clock64 twin + events). The LLM tier and the roofline probes are
only ever timed side by side (stages aa, search_triton, evaluate), never one by one."""


def run(kernels: Path, backend, only: str | None = None, log=print) -> list[dict]:
    entries = []
    for specs_json in sorted(Path(kernels) / f / "specs.json" for f in FAMILIES):
        for spec in load_specs(specs_json):
            if only and not re.search(only, spec.kernel):
                continue
            ptx = read_ptx(specs_json, spec)
            t0 = time.perf_counter()
            rec = backend.measure(spec, [Variant(spec, ptx, ())])[0]
            e = kernel_entry(spec, rec)
            entries.append(e)
            log(f"baseline: {spec.kernel:40s} valid={rec.valid!s:5s} cycles={rec.cycles_median} "
                f"time_ms={rec.time_ms_median} regs={rec.registers} {rec.reason} "
                f"({time.perf_counter() - t0:.2f} s)")
    return entries


def _arguments(ap) -> None:
    ap.add_argument("--kernels", type=Path, default=Path("data/kernels"))
    ap.add_argument("--out", type=Path, default=Path("reports/baseline.json"))
    add_backend_arguments(ap, retry_invalid=True)
    ap.add_argument("--only", help="regex on kernel names (for partial runs; the report lists only those)")


def _body(args, cfg) -> int:
    backend = open_backend(args, cfg)
    try:
        entries = run(args.kernels, backend, args.only)
        prov = backend.provenance()
    finally:
        backend.close()
    # `date` is when the numbers were measured (the newest record used), not when this report was written:
    # a replay on a CPU reproduces the GPU run's report, provenance included.
    stamps = sorted(e["measured_at"] for e in entries if e.get("measured_at"))
    report = {"provenance": {**prov, "date": stamps[-1] if stamps else None,
                             "measured": {"first": stamps[0], "last": stamps[-1]} if stamps else None,
                             "backend": type(backend).__name__,
                             "command": command_line("baseline", args.argv),
                             "config_hash": cfg.measure.config_hash(), "config": cfg.measure.measured()},
              "kernels": entries}
    write_json(args.out, report)
    valid = sum(e["valid"] for e in entries)
    print(f"baseline: {valid}/{len(entries)} kernels valid; wrote {args.out}")
    return 0


def main(argv: list[str] | None = None) -> int:
    return run_stage("baseline", __doc__, _arguments, _body, argv)


if __name__ == "__main__":
    sys.exit(main())
