"""reports/knob_shapes.json (#28, stage knob_shapes: the one variant deployed for the shapes of one stock PTX
whose winners differ, judged again at each shape) into metrics' `shapes.<workload>` and the README's lines."""

from __future__ import annotations

from chronos.measure.verdicts import FASTER, geomean
from chronos.report.knobs import _gpu, _workload, _x
from chronos.tuning.shapes import NOT_SHARED


def shapes_metrics(shapes: dict | None, metrics: dict) -> None:
    """Per workload with shapes that share a variant: how many, how many were judged again, at how many it
    held (faster than stock, bit-exact), the geomean of its confirmed speedups there, how many wait for a GPU
    (no part yet, or a part that judged an earlier variant)."""
    for family, rows in _shared_rows(shapes).items():
        judged = [r for r in rows if "best" in r]
        metrics.setdefault("shapes", {})[_workload(family)] = {
            "shared": len(rows), "judged": len(judged),
            "held": sum(r["best"]["verdict"] == FASTER for r in judged),
            "time_geomean": geomean([r["speedup"] for r in judged]) if judged else None,
            "waiting": sum(str(r.get("error", "")).startswith(("not_measured", "stale part")) for r in rows)}


def shapes_section(shapes: dict | None, metrics: dict) -> list[str]:
    """The README's lines: one per workload with shapes that share a variant."""
    per = metrics.get("shapes") or {}
    if not per:
        return []
    gpu = _gpu(shapes) if any(s["judged"] for s in per.values()) else "none yet"
    note = ("Shapes sharing one variant (stage knob_shapes): where one stock PTX runs at several shapes "
            "whose winners differ, the DB deploys the one variant every shape measured faster and bit-exact; "
            "it is judged again at each shape, beside stock and the shape's own winner, and gives way to the "
            f"next where it does not hold (GPU: {gpu}).")
    head = ("| workload | shapes sharing a variant | judged again | held | geomean there | "
            "waiting for a GPU |")
    lines = ["", note, "", head, "|---|---|---|---|---|---|"]
    for w, s in per.items():
        lines.append(f"| {w} | {s['shared']} | {s['judged']} | {s['held']} | {_x(s['time_geomean'])} | "
                     f"{s['waiting']} |")
    return lines


def _shared_rows(shapes: dict | None) -> dict[str, list[dict]]:
    """Per family the stage's rows of shapes that share a variant (not the kernels it settles as not one)."""
    out: dict[str, list[dict]] = {}
    for r in (shapes or {}).get("kernels", []):
        if r.get("error") != NOT_SHARED and not str(r.get("error", "")).startswith("skipped"):
            out.setdefault(r["family"], []).append(r)
    return out
