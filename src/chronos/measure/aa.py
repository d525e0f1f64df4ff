"""The A/A test of the time verdicts: a kernel's baseline compared, through the real decision path
(backend.compare, Comparison.verdict), with copies of itself: its PTX file as committed (a different text,
the same machine code) and further loads of the re-emitted PTX. Each copy is a decision; any verdict other
than `no_difference` is false. Stage `aa` runs it over the suites; the device checks run it on a few kernels.
"""

from __future__ import annotations

from pathlib import Path

from chronos.kernels.spec import load_module, read_ptx
from chronos.kernels.variant import Variant
from chronos.measure.verdicts import FASTER, SLOWER
from chronos.ptx import emit


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
