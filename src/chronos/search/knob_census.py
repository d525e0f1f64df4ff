"""The census of action space v3's compile knobs (#28): per captured kernel, every single knob value beside
stock (num_warps, num_stages, maxnreg; chronos.triton.recompile), all in one side-by-side comparison in wall
time, each verified bit-exactly against stock; the fastest one that wins is judged again beside stock alone
(the winner of many is biased low). It says where the ceiling of the knob space lies before a learner is
asked to reach it, and how often each knob value keeps the kernel's bits.

The variants were compiled on the GPU image from each kernel's TTIR (scripts/make_knob_variants.py) and are
committed beside the capture (`knobs.json`, `knobs/`); a variant runs with its own block (num_warps x 32
threads) and shared memory. Each kernel's outcome is recorded in a part file; replay compares again from
the store and must choose as recorded.
"""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path

from chronos.errors import ChronosError, one_line
from chronos.kernels.spec import read_ptx, read_ptx_file
from chronos.kernels.variant import Launch, Variant
from chronos.measure.numerics import bit_exact
from chronos.measure.store import now_stamp
from chronos.measure.verdicts import FASTER, geomean
from chronos.ptx.atomics import float_atomics
from chronos.search.timed import time_row

MANIFEST = "knobs.json"


def knob_variants(folder: Path, spec) -> tuple[list[Variant], list[dict]]:
    """The kernel's stock variant and its knob variants (one per distinct compiled value), and the values
    that gave no variant (same PTX as stock, or a compile error) as rows of their own."""
    manifest = folder / MANIFEST
    if not manifest.is_file():
        raise ChronosError(f"{spec.kernel}: no {manifest} (make it on a GPU image: "
                           "scripts/make_knob_variants.py)")
    entry = json.loads(manifest.read_text())["kernels"].get(spec.ptx)
    if entry is None or not entry.get("remade_stock"):
        why = (entry or {}).get("error") or "its TTIR did not remake the stock PTX"
        raise ChronosError(f"{spec.kernel}: no knob variants ({why})")
    variants = [Variant(spec, read_ptx(folder / "specs.json", spec), ())]
    others = []
    for v in entry["variants"]:
        label = f"{v['knob']}={v['value']}"
        if "ptx" not in v:
            others.append({"action": label, "valid": False,
                           "reason": "same_as_stock" if v.get("same_as_stock") else "compile_error",
                           **({"log": v["error"]} if "error" in v else {})})
            continue
        launch = Launch((32 * v["num_warps"], 1, 1), v["shared"])
        variants.append(Variant(spec, read_ptx_file(folder / v["ptx"]), (label,), launch=launch))
    return variants, others


def racy(spec, stock_ptx: str) -> dict | None:
    """The error row of a kernel with float atomics: no variant can be verified bit-exactly, nor stock against
    itself."""
    atomics = float_atomics(stock_ptx)
    if not atomics:
        return None
    return {"kernel": spec.kernel, "error": f"skipped: float atomics ({', '.join(atomics)})"}


def compare_and_confirm(spec, variants: list[Variant], backend, timing, min_gain: float) -> dict:
    """`variants` (stock first) in one side-by-side comparison, then the fastest that beats stock judged again
    beside stock alone: the kernel's row (candidates against stock, the confirmed best, its speedup: 1.0 where
    nothing was confirmed faster), or an error row when stock itself is invalid."""
    cmp = backend.compare(spec, variants, timing)
    if not cmp.baseline.valid:
        return {"kernel": spec.kernel, "error": f"stock invalid ({cmp.baseline.reason})"}
    rows = [time_row(cmp, i, timing, min_gain) for i in range(1, len(variants))]
    faster = [(r, v) for r, v in zip(rows, variants[1:], strict=True) if r["verdict"] == FASTER]
    best = {"actions": [], "ratio": 1.0, "ci": None, "verdict": "none"}
    if faster:
        _, chosen = min(faster, key=lambda rv: rv[0]["ratio"])
        again = backend.compare(spec, [variants[0], chosen], timing)
        best = {k: v for k, v in time_row(again, 1, timing, min_gain).items()
                if k in ("actions", "ratio", "ci", "verdict", "time_ms")}
    confirmed = best["verdict"] == FASTER
    return {"kernel": spec.kernel, "baseline_ms": cmp.time_ms(0)[0], "primary": cmp.primary,
            "candidates": rows, "best": best,
            "speedup": 1.0 / best["ratio"] if confirmed and best.get("ratio") else 1.0}


def census_kernel(spec, folder: Path, backend, timing, min_gain: float) -> dict:
    """One kernel: all knob variants beside stock, then the fastest winner beside stock alone."""
    if skipped := racy(spec, read_ptx(folder / "specs.json", spec)):
        return skipped
    variants, others = knob_variants(folder, spec)
    row = compare_and_confirm(spec, variants, backend, timing, min_gain)
    if "candidates" in row:
        row["candidates"] = [{"action": v.actions[0], **r}
                             for v, r in zip(variants[1:], row["candidates"], strict=True)] + others
    return row


def census_family(family: str, selected, measure, parts: Path, replay: bool, out_of_budget,
                  provenance, label: str = "knob_census", settled=None, pin=None,
                  remeasure: bool = False, stale=None) -> list[dict]:
    """`measure(spec)` (a row) for every selected kernel of a family (gpu: recorded into `parts`; replay:
    measured again from the store, `as_recorded` saying whether it chose the same). On a GPU a kernel whose
    part is recorded is taken as recorded (`from_part`), so that a run adds the kernels a new selection
    brings without spending GPU time on the others; `remeasure` times it again. `settled(spec)`: the row
    of a kernel decided without measuring (from committed files alone, alike on a GPU and in replay), or
    None; where it raises ChronosError, the kernel's error row (as where `measure` does).
    `pin(provenance)`: in replay, called with a kernel's part's provenance before it is measured again
    (the GPU it was measured on; `recorded_at`, the store time it was recorded at, where the part has it), so
    that a later stage's timing of the same contenders, on another GPU or later, cannot change it.
    `stale(spec, recorded)`: why a recorded part no longer answers the question (measured on another root or
    with another ptxas than the kernel deploys with), or None: a GPU measures it again; replay says so."""
    rows = []
    for _, spec in selected:
        if settled is not None and (row := _settled(spec, settled)) is not None:
            rows.append({"family": family, **row})
            continue
        part = parts / family / f"{spec.kernel}.json"
        recorded = json.loads(part.read_text()) if part.is_file() else None
        why_stale = _stale(spec, recorded, stale)
        if why_stale and not replay:
            print(f"{label}: {family} {spec.kernel}: its part is stale ({why_stale}): measured again",
                  flush=True)
            recorded = None
        if replay and recorded is not None and pin is not None:
            pin(recorded.get("provenance") or {})
        if why_stale and replay:
            row = {"kernel": spec.kernel, "error": f"stale part: {why_stale} (run this stage on a GPU: "
                                                   "it measures the kernel again)"}
        elif recorded is None and (replay or out_of_budget()):
            why = "not_measured (run this stage on a GPU)" if replay else "not_measured (budget)"
            row = {"kernel": spec.kernel, "error": why}
        elif recorded is not None and not (replay or remeasure):
            row = {**{k: v for k, v in recorded.items() if k != "provenance"}, "from_part": True}
        else:
            row = _measured(spec, measure, recorded, part, provenance)
        rows.append({"family": family, **row})
        print(f"{label}: {family:16s} {spec.kernel[:60]:60s} "
              f"{row.get('error') or '+'.join(row['best']['actions']) or '-'} {row.get('speedup', 0):.4f}"
              + (" (its part, as recorded)" if row.get("from_part") else ""),
              flush=True)
    return rows


def _settled(spec, settled) -> dict | None:
    try:
        return settled(spec)
    except ChronosError as e:  # e.g. knob_blocks without a manifest (hand-written kernels have none)
        return {"kernel": spec.kernel, "error": one_line(e, 400)}


def _stale(spec, recorded: dict | None, stale) -> str | None:
    if recorded is None or stale is None or "error" in recorded:
        return None
    try:
        return stale(spec, recorded)
    except ChronosError as e:  # what the part was measured from cannot be rebuilt: measure decides
        return one_line(e, 400)


def _measured(spec, measure, recorded: dict | None, part: Path, provenance) -> dict:
    """`measure(spec)`'s row (an error row where it raised): recorded into `part` where nothing was, else
    compared with the record (`as_recorded`)."""
    try:
        row = measure(spec)
    except ChronosError as e:
        return {"kernel": spec.kernel, "error": one_line(e, 400)}
    if recorded is None and "error" not in row:
        part.parent.mkdir(parents=True, exist_ok=True)
        stamp = {**provenance(), "recorded_at": now_stamp()}  # after every comparison of the kernel
        part.write_text(json.dumps({**row, "provenance": stamp}, indent=1) + "\n")
    elif recorded is not None and "error" not in row:
        row["as_recorded"] = recorded["best"]["actions"] == row["best"]["actions"]
    return row


def knob_summary(rows: list[dict]) -> dict:
    """Counts, the geomean speedup of the confirmed winners (1.0 where none), and per knob value how often it
    compiled to a new variant, stayed bit-exact, and was faster than stock."""
    done = [r for r in rows if "best" in r]
    per: dict[str, dict[str, int]] = defaultdict(lambda: {"tried": 0, "variant": 0, "exact": 0, "faster": 0})
    for r in done:
        for c in r["candidates"]:
            s = per[c["action"]]
            s["tried"] += 1
            if c.get("reason") in ("same_as_stock", "compile_error"):
                continue
            s["variant"] += 1
            s["exact"] += bit_exact(c)
            s["faster"] += c.get("verdict") == FASTER
    knobs: dict[str, dict] = defaultdict(lambda: {"variant": 0, "exact": 0, "faster": 0})
    for label, s in per.items():
        k = knobs[label.split("=")[0]]
        for f in ("variant", "exact", "faster"):
            k[f] += s[f]
    for k in knobs.values():
        k["exact_share"] = k["exact"] / k["variant"] if k["variant"] else None
    variants = sum(k["variant"] for k in knobs.values())
    return {
        "kernels": len(rows),
        "measured": len(done),
        "faster": sum(r["best"]["verdict"] == FASTER for r in done),
        "time_geomean": geomean([r["speedup"] for r in done]) if done else None,
        "exact_share": sum(k["exact"] for k in knobs.values()) / variants if variants else None,
        "knobs": dict(sorted(knobs.items())),
        "values": dict(sorted(per.items())),
    }
