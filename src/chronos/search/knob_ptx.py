"""The joint space's first step (#28): the v2 PTX actions applied on top of each kernel's compile-knob winner.

Per kernel the root is the knob value the knob census confirmed faster than stock (data/knob_census), or
stock where none was. One side-by-side comparison holds stock, the root and the root with each legal
single v2 action (each knob variant keeps its own launch geometry), all verified bit-exactly against stock;
the fastest winner against stock is judged again beside stock alone. The kernel's joint speedup is that
confirmed ratio's inverse (1.0 where nothing won): knobs and PTX actions together, stock as the reference.
"""

from __future__ import annotations

import json
from pathlib import Path

from chronos.actions import V2
from chronos.errors import ChronosError
from chronos.kernels.spec import load_module, read_ptx
from chronos.kernels.variant import Variant
from chronos.measure.numerics import bit_exact
from chronos.measure.verdicts import FASTER, geomean
from chronos.ptx import emit, parse
from chronos.search.knob_census import compare_and_confirm, knob_variants, racy
from chronos.search.space import realize
from chronos.transforms import legal_actions


def knob_winner(knob_parts: Path, family: str, kernel: str) -> str | None:
    """The knob value the census confirmed faster than stock for this kernel, if any."""
    part = knob_parts / family / f"{kernel}.json"
    if not part.is_file():
        return None
    best = json.loads(part.read_text())["best"]
    return best["actions"][0] if best.get("verdict") == FASTER and best.get("actions") else None


def on_top(spec, root: Variant, module=None) -> list[Variant]:
    """`root` with each legal single v2 action applied (its launch kept), one variant per distinct PTX
    (`module`: root's PTX parsed, where the caller has it)."""
    if module is None:
        module = parse(root.ptx)
        module.align_contract.update(spec.alignment)
    out, seen = [], {root.key}
    for action in legal_actions(module, space=V2):
        m = realize(module, (action,))
        if m is None:
            continue
        v = Variant(spec, emit(m), (*root.actions, action), launch=root.launch)
        if v.key not in seen:
            seen.add(v.key)
            out.append(v)
    return out


def contenders(spec, folder: Path, knob: str | None) -> list[Variant]:
    """Stock, the root (the knob winner, or stock) and the root with each legal single v2 action."""
    specs_json = folder / "specs.json"
    stock = Variant(spec, read_ptx(specs_json, spec), ())
    if knob is None:
        return [stock, *on_top(spec, stock, load_module(specs_json, spec))]
    kv = next((v for v in knob_variants(folder, spec)[0] if v.actions == (knob,)), None)
    if kv is None:
        raise ChronosError(f"{spec.kernel}: the census's winner {knob} is not among its knob variants")
    return [stock, kv, *on_top(spec, kv)]


def joint_kernel(spec, folder: Path, knob: str | None, backend, timing, min_gain: float) -> dict:
    """One kernel: stock, the root and the root with each legal v2 action, the fastest confirmed."""
    if skipped := racy(spec, read_ptx(folder / "specs.json", spec)):
        return skipped
    row = compare_and_confirm(spec, contenders(spec, folder, knob), backend, timing, min_gain)
    if "best" in row:
        best = row["best"]
        row = {"kernel": row["kernel"], "root": knob, "baseline_ms": row["baseline_ms"],
               "candidates": row["candidates"], "best": best, "speedup": row["speedup"],
               "ptx_on_top": best["verdict"] == FASTER and len(best["actions"]) > (knob is not None)}
    return row


def joint_summary(rows: list[dict]) -> dict:
    """Counts, the geomean of the confirmed joint speedups (1.0 where none), how many winners hold a PTX
    action on top, how many kernels started from a knob winner, and the bit-exact share of the contenders."""
    done = [r for r in rows if "best" in r]
    cands = [c for r in done for c in r["candidates"] if c.get("reason") != "ptxas_error"]
    return {"kernels": len(rows), "measured": len(done),
            "faster": sum(r["best"]["verdict"] == FASTER for r in done),
            "time_geomean": geomean([r["speedup"] for r in done]) if done else None,
            "ptx_on_top": sum(bool(r["ptx_on_top"]) for r in done),
            "knob_root": sum(r["root"] is not None for r in done),
            "exact_share": sum(bit_exact(c) for c in cands) / len(cands) if cands else None}
