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

from chronos.errors import ChronosError
from chronos.kernels.spec import load_module, read_ptx
from chronos.kernels.variant import Variant
from chronos.measure.verdicts import FASTER, SLOWER
from chronos.progress import progress
from chronos.ptx import emit
from chronos.search.runs import kernels_of
from chronos.stages.common import run_stage, write_json
from chronos.stages.measuring import add_backend_arguments, open_backend


def _arguments(ap) -> None:
    ap.add_argument("--kernels", type=Path, default=Path("data/kernels"))
    ap.add_argument("--out", type=Path, default=Path("reports/aa.json"))
    ap.add_argument("--copies", type=int, default=8, help="copies of the baseline per kernel (decisions)")
    add_backend_arguments(ap)


def aa_kernel(spec, specs_json: Path, backend, timing, min_gain: float, copies: int) -> dict:
    root = emit(load_module(specs_json, spec))
    original = read_ptx(specs_json, spec)
    variants = [Variant(spec, root, ()), Variant(spec, original, ()),
                *[Variant(spec, root, ()) for _ in range(copies - 1)]]
    cmp = backend.compare(spec, variants, timing)
    rows = []
    for i in range(1, len(variants)):
        est = cmp.estimate(i, timing)
        rows.append({"copy": "committed_ptx" if i == 1 else f"reload_{i - 1}",
                     "verdict": cmp.verdict(i, timing, min_gain),
                     **({"ratio": est.ratio, "ci": [est.low, est.high]} if est else {})})
    return {"kernel": spec.kernel, "primary": cmp.primary, "baseline_ms": cmp.time_ms(0)[0], "copies": rows,
            "measured_at": cmp.provenance.get("created_at", "")}


def aa_summary(rows: list[dict]) -> dict:
    verdicts = [c["verdict"] for r in rows if "copies" in r for c in r["copies"]]
    n = len(verdicts)
    ratios = sorted(c["ratio"] for r in rows if "copies" in r for c in r["copies"] if "ratio" in c)
    return {"decisions": n, "false_faster": sum(v == FASTER for v in verdicts) / n if n else None,
            "false_slower": sum(v == SLOWER for v in verdicts) / n if n else None,
            "invalid": sum(v.startswith("invalid") for v in verdicts),
            "kernels": len(rows), "failed": sum("error" in r for r in rows),
            "ratio_p01": ratios[len(ratios) // 100] if ratios else None,
            "ratio_p99": ratios[-1 - len(ratios) // 100] if ratios else None}


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
                row = {"family": family, "kernel": spec.kernel, "error": " ".join(str(e).split())[:400]}
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
