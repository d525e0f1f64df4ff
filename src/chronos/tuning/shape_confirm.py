"""Stage knob_shapes (#28): the one variant that deploys for the shapes of one stock PTX whose winners differ
(chronos.tuning.shapes) was picked as the best of comparisons each made to choose something else, so, like
every other winner, it is judged again: at each shape one comparison holds stock, that variant and the
shape's own winner. The part (`confirms`: the variant) is one more measurement of it, which
shapes.variant_measurements reads beside the others: where it is not faster than stock or not bit-exact at
one shape, the variant no longer stands for the shapes, and the stage's next run judges the next one
(the part is stale). config_db.latest_parts never takes such a part for a kernel's own winner."""

from __future__ import annotations

import json
from pathlib import Path

from chronos.errors import ChronosError
from chronos.kernels.spec import read_ptx
from chronos.kernels.variant import Variant
from chronos.measure.numerics import bit_exact
from chronos.measure.verdicts import FASTER, geomean
from chronos.search.timed import time_row
from chronos.tuning.config_db import latest_parts
from chronos.tuning.rebuild import variant_of
from chronos.tuning.shapes import measured_rows, shared_ptx
from chronos.tuning.winners import confirmed_winner


def shared_variants(folder: Path, stage_folders: list[Path]) -> dict[str, str]:
    """Kernel -> the variant (its label) that deploys for its shapes, as config_db chooses it from
    `stage_folders` (the DB stages' parts and this stage's, of one family)."""
    specs = {s["kernel"]: s for s in json.loads((folder / "specs.json").read_text())}
    rows = [(p, json.loads(p.read_text())) for p in latest_parts(stage_folders)]
    _, _, stand_ins = shared_ptx(rows, specs, measured_rows(stage_folders))
    return {k: s["variant"] for part in stand_ins.values() for k, s in part["shapes"].items()}


def own_winners(stage_folders: list[Path]) -> dict[str, list[str]]:
    """Kernel -> its own confirmed, bit-exact winner's actions (its latest DB stage's part); kernels with
    none are absent."""
    rows = (json.loads(p.read_text()) for p in latest_parts(stage_folders))
    return {row["kernel"]: list(row["best"]["actions"]) for row in rows if confirmed_winner(row)[0]}


def confirm_kernel(spec, folder: Path, label: str, own: list[str] | None, backend, timing,
                   min_gain: float) -> dict:
    """One shape: stock, the shared variant `label` and the shape's own winner `own` side by side; the part
    says whether the shared variant is faster than stock and bit-exact here (`best`, else verdict none)."""
    stock = Variant(spec, read_ptx(folder / "specs.json", spec), ())
    shared = variant_of(folder, spec, label.split("+"))
    mine, why_not = None, None
    if own and "+".join(own) != label:
        try:
            mine = variant_of(folder, spec, own)
        except ChronosError as e:  # the shared variant is still judged beside stock
            why_not = f"its own winner {'+'.join(own)} not rebuilt: {e}"
    lineup = [stock, shared, *([mine] if mine is not None and mine.key != shared.key else [])]
    cmp = backend.compare(spec, lineup, timing)
    if not cmp.baseline.valid:
        return {"kernel": spec.kernel, "error": f"stock invalid ({cmp.baseline.reason})"}
    rows = [{"action": "+".join(v.actions), "actions": list(v.actions),
             **time_row(cmp, i, timing, min_gain)} for i, v in enumerate(lineup[1:], 1)]
    judged = rows[0]
    held = judged["verdict"] == FASTER and bit_exact(judged)
    best = ({k: judged[k] for k in ("actions", "valid", "reason", "ratio", "ci", "verdict", "time_ms")
             if k in judged} if held else {"actions": [], "ratio": 1.0, "ci": None, "verdict": "none"})
    return {"kernel": spec.kernel, "confirms": label, "own": own, "baseline_ms": cmp.time_ms(0)[0],
            "candidates": rows, "best": best, "speedup": 1.0 / best["ratio"],
            "own_over_shared": (rows[1]["ratio"] / judged["ratio"]) if len(rows) > 1 else None,
            **({"own_not_timed": why_not} if why_not else {})}


def stale_confirmation(recorded: dict, label: str | None) -> str | None:
    """Why a recorded part no longer judges the variant that stands for its shapes now, or None."""
    if label is not None and recorded.get("confirms") not in (None, label):
        return f"judged {recorded['confirms']}; the variant for its shapes is now {label}"
    return None


def shapes_summary(rows: list[dict]) -> dict:
    """How many shapes were judged, at how many the shared variant held (faster, bit-exact), the geomean of
    its confirmed speedups there (1.0 where it did not hold), and of own winner / shared variant."""
    done = [r for r in rows if "best" in r]
    costs = [r["own_over_shared"] for r in done if r.get("own_over_shared")]
    return {"kernels": len(rows), "measured": len(done),
            "faster": sum(r["best"]["verdict"] == FASTER for r in done),
            "time_geomean": geomean([r["speedup"] for r in done]) if done else None,
            "own_over_shared": geomean(costs) if costs else None}
