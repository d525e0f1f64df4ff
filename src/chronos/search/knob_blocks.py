"""The joint space's second step (#28): block sizes (XBLOCK, YBLOCK, R0_BLOCK...) of each Inductor kernel's
config beside the first step's winner, then the v2 PTX actions on top of a block winner.

Per kernel, one side-by-side comparison holds stock, every block variant (each with its own grid, block and
shared memory; chronos.triton.blocks, compiled by scripts/make_block_variants.py) and the knob_ptx step's
confirmed winner, all verified bit-exactly against stock. Where a block variant is the fastest winner, a
second comparison holds stock, that variant, it with each legal single v2 action, and the earlier winner;
the fastest winner of the last comparison is judged again beside stock alone. The kernel's v3 speedup is
that confirmed ratio's inverse (1.0 where nothing won): knobs, block sizes and PTX actions together, stock
as the reference.
"""

from __future__ import annotations

import json
from pathlib import Path

from chronos.errors import ChronosError
from chronos.kernels.spec import read_ptx
from chronos.kernels.variant import Variant, recorded_variant
from chronos.measure.numerics import bit_exact
from chronos.measure.verdicts import FASTER, geomean
from chronos.search.knob_census import compare_and_confirm, racy
from chronos.search.knob_ptx import contenders, on_top
from chronos.search.timed import time_row

MANIFEST = "blocks.json"
NOTHING_TO_TRY = "no block variant and no earlier winner"
"""A kernel with no block variant whose knob_ptx step confirmed nothing: stock stays, its v3 speedup is 1.0
(counted so in the summary's geomean, as knob_ptx counts a kernel where nothing won)."""


def block_variants(folder: Path, spec) -> tuple[list[Variant], list[dict]]:
    """The kernel's block variants that launch for this spec (their grid evaluated for its numels), and the
    moves that gave no variant as rows of their own (same PTX as stock, a compile error, no grid)."""
    manifest = folder / MANIFEST
    if not manifest.is_file():
        raise ChronosError(f"{spec.kernel}: no {manifest} (make it on a GPU image: "
                           "scripts/make_block_variants.py)")
    entry = json.loads(manifest.read_text())["kernels"].get(spec.ptx) or {}
    if not entry.get("remade_stock"):
        return [], [{"action": "blocks", "valid": False, "reason": "no_stock_config",
                     "log": entry.get("error", "not in the manifest")}]
    out, others = [], []
    for v in entry["variants"]:
        got = recorded_variant(folder, spec, v, (v["label"],))
        if isinstance(got, Variant):
            out.append(got)
        else:
            others.append({"action": v["label"], **got})
    return out, others


def confirmed(part: Path) -> tuple[dict, tuple[str, ...]] | None:
    """(the part's row, its winner's actions) where a stage's part file holds a confirmed winner."""
    if not part.is_file():
        return None
    row = json.loads(part.read_text())
    best = row.get("best") or {}
    return (row, tuple(best["actions"])) if best.get("verdict") == FASTER else None


def prior_winner(spec, folder: Path, joint_parts: Path, family: str) -> Variant | None:
    """The knob_ptx step's confirmed winner for this kernel, rebuilt from its actions (None where nothing
    won there or it was not measured)."""
    won = confirmed(joint_parts / family / f"{spec.kernel}.json")
    if won is None:
        return None
    row, want = won
    found = next((v for v in contenders(spec, folder, row.get("root")) if v.actions == want), None)
    if found is None:
        raise ChronosError(f"{spec.kernel}: knob_ptx's winner {'+'.join(want)} cannot be rebuilt")
    return found


def nothing_to_try(spec, folder: Path, prior: Variant | None) -> dict | None:
    """The row of a kernel with no block variant and no earlier winner (stock stays: v3 1.0), decided from
    the manifests and knob_ptx's parts alone; None where there is something to measure (or it is racy)."""
    if prior is not None or racy(spec, read_ptx(folder / "specs.json", spec)):
        return None
    blocks, others = block_variants(folder, spec)  # no manifest: ChronosError, the kernel's error row
    return None if blocks else {"kernel": spec.kernel, "error": NOTHING_TO_TRY, "candidates": others}


def blocks_kernel(spec, folder: Path, prior: Variant | None, backend, timing, min_gain: float) -> dict:
    """One kernel: stock, its block variants and the prior winner side by side; PTX actions on top of a
    block winner; the fastest confirmed beside stock alone."""
    stock_ptx = read_ptx(folder / "specs.json", spec)
    if skipped := racy(spec, stock_ptx):
        return skipped
    stock = Variant(spec, stock_ptx, ())
    blocks, others = block_variants(folder, spec)
    first = [stock, *blocks, *([prior] if prior is not None else [])]
    if len(first) == 1:
        return {"kernel": spec.kernel, "error": NOTHING_TO_TRY, "candidates": others}
    cmp = backend.compare(spec, first, timing)
    if not cmp.baseline.valid:
        return {"kernel": spec.kernel, "error": f"stock invalid ({cmp.baseline.reason})"}
    rows = [{"action": "+".join(v.actions), **time_row(cmp, i, timing, min_gain)}
            for i, v in enumerate(first[1:], 1)]
    faster = [(r["ratio"], v) for r, v in zip(rows, first[1:], strict=True) if r["verdict"] == FASTER]
    root = min(faster, key=lambda rv: rv[0])[1] if faster else None
    if root is None:
        best = {"actions": [], "ratio": 1.0, "ci": None, "verdict": "none"}
        return {"kernel": spec.kernel, "baseline_ms": cmp.time_ms(0)[0], "root": None,
                "blocks": rows + others, "best": best, "speedup": 1.0, "block_root": False,
                "ptx_on_top": False}
    block_root = root in blocks
    second = [stock, root, *(on_top(spec, root) if block_root else []),
              *([prior] if block_root and prior is not None else [])]
    row = compare_and_confirm(spec, second, backend, timing, min_gain)
    if "best" not in row:
        return row
    best = row["best"]
    won = best["verdict"] == FASTER
    labelled = [{"action": "+".join(v.actions), **c}
                for v, c in zip(second[1:], row["candidates"], strict=True)]
    return {"kernel": spec.kernel, "baseline_ms": row["baseline_ms"], "root": list(root.actions),
            "blocks": rows + others, "candidates": labelled, "best": best, "speedup": row["speedup"],
            "block_root": won and block_root and best["actions"][:1] == list(root.actions),
            "ptx_on_top": won and block_root and len(best["actions"]) > 1}


def blocks_summary(rows: list[dict]) -> dict:
    """Counts, the geomean of the confirmed v3 speedups (1.0 where none, and for the kernels with nothing to
    try: `stock_kept`), how many winners start from a block variant and hold a PTX action on top, and per
    block knob how many variants kept stock's bits."""
    done = [r for r in rows if "best" in r]
    kept = [r for r in rows if r.get("error") == NOTHING_TO_TRY]
    per: dict[str, dict] = {}
    for r in done:
        for c in r["blocks"]:
            if c.get("reason") in ("same_as_stock", "compile_error", "no_grid", "no_stock_config") or \
                    "BLOCK" not in c["action"]:
                continue
            s = per.setdefault(c["action"].split("=")[0], {"variant": 0, "exact": 0, "faster": 0})
            s["variant"] += 1
            s["exact"] += bit_exact(c)
            s["faster"] += c.get("verdict") == FASTER
    for s in per.values():
        s["exact_share"] = s["exact"] / s["variant"] if s["variant"] else None
    n = sum(s["variant"] for s in per.values())
    speedups = [r["speedup"] for r in done] + [1.0] * len(kept)
    return {"kernels": len(rows), "measured": len(done), "stock_kept": len(kept),
            "faster": sum(r["best"]["verdict"] == FASTER for r in done),
            "time_geomean": geomean(speedups) if done else None,
            "block_root": sum(bool(r["block_root"]) for r in done),
            "ptx_on_top": sum(bool(r["ptx_on_top"]) for r in done),
            "exact_share": sum(s["exact"] for s in per.values()) / n if n else None,
            "blocks": dict(sorted(per.items()))}


def measured_without(recorded: dict, prior: Variant | None) -> str | None:
    """knob_ptx's winner now (its label) where a knob_blocks part's comparison did not hold it (a later
    knob_ptx part changed it: the part is stale), else None."""
    label = prior and "+".join(prior.actions)
    if label and "blocks" in recorded and label not in {r.get("action") for r in recorded["blocks"]}:
        return label
    return None


def v3_winner(spec, folder: Path, parts: dict[str, Path], family: str) -> Variant | None:
    """Chronos v3's confirmed winner for this kernel, rebuilt from its actions: knob_blocks' where that stage
    measured the kernel beside knob_ptx's winner as it is now, else knob_ptx's (a stale knob_blocks part
    counts at the earlier winner, as its stage's replay counts it; `parts`: {"knob_ptx", "knob_blocks"} ->
    parts folders); None where nothing won."""
    prior = prior_winner(spec, folder, parts["knob_ptx"], family)
    part = parts["knob_blocks"] / family / f"{spec.kernel}.json"
    if not part.is_file() or measured_without(json.loads(part.read_text()), prior):
        return prior
    won = confirmed(part)
    if won is None:
        return None
    row, want = won
    if not row.get("block_root"):  # the earlier winner stayed the fastest
        return prior if prior is not None and prior.actions == want else None
    root = next((v for v in block_variants(folder, spec)[0] if v.actions == want[:1]), None)
    candidates = [] if root is None else [root, *on_top(spec, root)]
    found = next((v for v in candidates if v.actions == want), None)
    if found is None:
        raise ChronosError(f"{spec.kernel}: knob_blocks' winner {'+'.join(want)} cannot be rebuilt")
    return found
