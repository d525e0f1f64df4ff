"""Inductor's own tuners as anchors, side by side with Chronos (#28 item 5): per captured kernel, the config
that max-autotune and coordinate descent choose for the same source (scripts/make_anchor_variants.py),
timed in one comparison beside stock and Chronos v3's confirmed winner (knob_blocks, else knob_ptx).

The anchors accept changed numerics, so this comparison runs in the tolerance mode (measure.tolerance from
search.knob_census.anchor_tolerance): every contender within it is timed, and each row says whether it kept
stock's bits. An anchor whose tuner chose the stock config is the stock kernel (speedup 1.0, not timed);
one whose run did not launch the kernel (another fusion) is left out of its geomean, with why. Then the v2
PTX actions on top of coordinate descent's kernel, beside it alone: what Chronos adds to Inductor's best.
"""

from __future__ import annotations

import json
from pathlib import Path

from chronos.errors import ChronosError
from chronos.kernels.spec import read_ptx
from chronos.kernels.variant import Variant, recorded_variant
from chronos.measure.numerics import bit_exact
from chronos.measure.verdicts import FASTER, geomean
from chronos.search.knob_census import racy
from chronos.search.knob_ptx import on_top
from chronos.search.timed import time_row

MANIFEST = "anchors.json"
MODES = ("max_autotune", "coordesc")


NOT_INDUCTOR = "not applicable: a hand-written Triton kernel"
"""The start of the row of a kernel no Inductor tuner can choose a config for: Inductor's tuners pick the
configs of the kernels Inductor generates; a JIT function's own @triton.autotune (if any) runs in stock."""


def anchor_entry(folder: Path, spec) -> dict:
    """The kernel's record in the anchors manifest ({mode: its config compiled}; {} where it has none)."""
    manifest = folder / MANIFEST
    if not manifest.is_file():
        raise ChronosError(f"{spec.kernel}: no {manifest} (make it on a GPU image: "
                           "scripts/make_anchor_variants.py)")
    return json.loads(manifest.read_text())["kernels"].get(spec.ptx) or {}


def anchor_variants(folder: Path, spec,
                    entry: dict | None = None) -> tuple[dict[str, Variant], dict[str, str]]:
    """mode -> the anchor's variant for this spec's launch; mode -> "same_as_stock" or why there is none
    (`entry`: the kernel's manifest record, where the caller has read it)."""
    entry = anchor_entry(folder, spec) if entry is None else entry
    variants, other = {}, {}
    for mode in MODES:
        v = entry.get(mode) or {"error": "not in the manifest"}
        got = recorded_variant(folder, spec, v, (f"anchor:{mode}",))
        if isinstance(got, Variant):
            variants[mode] = got
        else:
            other[mode] = got["reason"] if got["reason"] == "same_as_stock" else (
                got.get("log") or "no grid for this launch")
    return variants, other


def anchors_kernel(spec, folder: Path, chronos: Variant | None, backend, timing, min_gain: float) -> dict:
    """One kernel: stock, the anchors and Chronos's winner in one comparison; then PTX actions on top of
    coordinate descent's kernel beside it."""
    stock_ptx = read_ptx(folder / "specs.json", spec)
    if skipped := racy(spec, stock_ptx):
        return skipped
    stock = Variant(spec, stock_ptx, ())
    anchors, other = anchor_variants(folder, spec)
    row: dict = {"kernel": spec.kernel, "anchors": {m: {"reason": why} for m, why in other.items()}}
    if not anchors:  # every tuner kept stock's config or has no anchor here: nothing of theirs to time
        return {**row, "best": {"actions": [], "verdict": "none"}, "speedup": 1.0}
    first = [stock, *anchors.values(), *([chronos] if chronos is not None else [])]
    cmp = backend.compare(spec, first, timing)
    if not cmp.baseline.valid:
        return {"kernel": spec.kernel, "error": f"stock invalid ({cmp.baseline.reason})"}
    rows = [{"action": "+".join(v.actions), **time_row(cmp, i, timing, min_gain)}
            for i, v in enumerate(first[1:], 1)]
    for mode, r in zip(anchors, rows, strict=False):
        row["anchors"][mode] = r
    if chronos is not None:
        row["chronos"] = rows[-1]
    contenders = (*row["anchors"].values(), row.get("chronos") or {})
    timed = [r for r in contenders if r.get("verdict") == FASTER]
    fastest = min(timed, key=lambda r: r["ratio"]) if timed else None
    row["best"] = {"actions": fastest["actions"], "verdict": FASTER} if fastest else {"actions": [],
                                                                                       "verdict": "none"}
    row["speedup"] = (speedup_of(row["chronos"]) or 1.0) if "chronos" in row else 1.0
    if "coordesc" in anchors:
        row["on_coordesc"] = on_coordesc(spec, stock, anchors["coordesc"], backend, timing, min_gain)
    return row


def on_coordesc(spec, stock: Variant, root: Variant, backend, timing, min_gain: float) -> dict:
    """v2 PTX actions on top of coordinate descent's kernel, judged against that kernel in one comparison
    (stock first: the reference of every output), the fastest confirmed beside it again."""
    tops = on_top(spec, root)
    none = {"best": {"actions": [], "verdict": "none"}, "speedup": 1.0}
    if not tops:
        return none
    cmp = backend.compare(spec, [stock, root, *tops], timing)
    if not cmp.baseline.valid:
        return {"error": f"stock invalid ({cmp.baseline.reason})"}
    rows = [time_row(cmp, i, timing, min_gain, against=1) for i in range(2, len(tops) + 2)]
    faster = [(r, v) for r, v in zip(rows, tops, strict=True) if r["verdict"] == FASTER]
    if not faster:
        return none
    chosen = min(faster, key=lambda rv: rv[0]["ratio"])[1]
    again = backend.compare(spec, [stock, root, chosen], timing)
    keep = ("actions", "ratio", "ci", "verdict", "valid", "reason")
    best = {k: v for k, v in time_row(again, 2, timing, min_gain, against=1).items() if k in keep}
    over_stock = {k: v for k, v in time_row(again, 2, timing, min_gain).items() if k in keep}
    return {"best": best, "speedup": 1.0 / best["ratio"] if best["verdict"] == FASTER else 1.0,
            "over_stock": over_stock}


def speedup_of(r: dict) -> float | None:
    """stock / contender from its row (1.0 for a stock-config anchor); None where it was not timed."""
    if r.get("reason") == "same_as_stock":
        return 1.0
    return 1.0 / r["ratio"] if r.get("valid") and r.get("ratio") else None


def coordesc_ptx(row: dict) -> float | None:
    """stock / (coordinate descent's kernel with the v2 PTX confirmed on top of it), side by side with stock
    in the confirming comparison; coordinate descent's own where nothing on top won."""
    over = (row.get("on_coordesc") or {}).get("over_stock") or {}
    if over.get("valid") and over.get("ratio") and row["on_coordesc"]["best"].get("verdict") == FASTER:
        return 1.0 / over["ratio"]
    return speedup_of(row["anchors"].get("coordesc", {}))


def _geomean_of(values: list[float | None]) -> float | None:
    vs = [v for v in values if v is not None]
    return geomean(vs) if vs else None


def anchors_summary(rows: list[dict]) -> dict:
    """Per tuner, over the kernels it was run on: their geomean speedup over stock (1.0 where it kept stock's
    config), how many it made faster, how many kept stock's bits. `head_to_head`: over the kernels where a
    tuner moved (so the comparison ran), each tuner and Chronos v3 (1.0 where v3 has no winner) side by
    side, and coordinate descent's kernel with v2 PTX on top (`coordesc_ptx`). `v3_on_coordesc`: v2 PTX on
    top of coordinate descent's kernel, over that kernel alone."""
    done = [r for r in rows if "anchors" in r]
    out: dict = {"kernels": len(rows), "measured": len(done),
                 "not_applicable": sum(str(r.get("error", "")).startswith(NOT_INDUCTOR) for r in rows)}
    for mode in MODES:
        rs = [r["anchors"].get(mode, {}) for r in done]
        sp = [s for s in map(speedup_of, rs) if s is not None]
        out[mode] = {"kernels": len(sp), "time_geomean": geomean(sp) if sp else None,
                     "faster": sum(1 for r in rs if r.get("verdict") == FASTER),
                     "bit_exact": sum(1 for r in rs if bit_exact(r) or r.get("reason") == "same_as_stock"),
                     "not_launched": sum(1 for r in rs if "launched no kernel" in str(r.get("reason", "")))}
    timed = [r for r in done if any("ratio" in a for a in r["anchors"].values())]
    head: dict = {"kernels": len(timed)}
    for name in MODES:
        head[name] = _geomean_of([speedup_of(r["anchors"].get(name, {})) for r in timed])
    head["chronos"] = _geomean_of([speedup_of(r["chronos"]) if "chronos" in r else 1.0 for r in timed])
    head["coordesc_ptx"] = _geomean_of([coordesc_ptx(r) for r in timed])
    out["head_to_head"] = head
    ch = [s for s in (speedup_of(r["chronos"]) for r in done if "chronos" in r) if s is not None]
    out["chronos"] = {"kernels": len(ch), "time_geomean": geomean(ch) if ch else None}
    on = [r["on_coordesc"] for r in done if "speedup" in r.get("on_coordesc", {})]
    faster = sum(o["best"].get("verdict") == FASTER for o in on)
    out["v3_on_coordesc"] = {"kernels": len(on), "faster": faster,
                             "time_geomean": geomean([o["speedup"] for o in on]) if on else None}
    return out
