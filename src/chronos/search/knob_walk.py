"""Action space v3's local search (#28 item 4): a walk over each Inductor kernel's config, several steps
where knob_blocks moves one, then the v2 PTX actions on top of where it stops.

One step is one side-by-side comparison: stock, the incumbent and every config one move away that the walk
has not seen (chronos.triton.blocks.walk_moves: a block size or num_warps one power of two up or down),
each compiled from the kernel's Inductor module (`walk.json`; on a GPU image by chronos.triton.walk_compile,
in replay read from that manifest by chronos.triton.walk_manifest: the compiler is passed in). The fastest
admissible neighbour whose interval against the incumbent lies below 1 - min_gain becomes the incumbent;
the walk stops where none does, or after `steps`. Admissible: bit-exact against stock in the walk from
stock's config (strict, the Chronos v3 number); within the stage's tolerance in the walk from coordinate
descent's config (Inductor's tuner changes numerics; each row still says whether it kept stock's bits).

Then, per kernel, one comparison holds stock, the earlier v3 winner (knob_blocks, else knob_ptx), both
walks' ends and coordinate descent's kernel; the fastest bit-exact winner of Chronos's own (`chronos`) and
of all (`with_coordesc`) are judged again in a confirming comparison beside stock, coordinate descent's
kernel and the end of the walk from it (its ratio against coordinate descent's kernel: `on_coordesc`).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from chronos.errors import ChronosError
from chronos.kernels.spec import read_ptx
from chronos.kernels.variant import Variant
from chronos.measure.numerics import bit_exact
from chronos.measure.verdicts import FASTER, geomean
from chronos.search.knob_anchors import anchor_entry, anchor_variants
from chronos.search.knob_census import racy
from chronos.search.knob_ptx import on_top
from chronos.search.timed import time_row

PREFIX = "walk:"


@dataclass(frozen=True)
class Point:
    """One config of an Inductor kernel: its constexprs (block sizes and others), num_warps, num_stages."""

    kwargs: tuple[tuple[str, int], ...]
    num_warps: int
    num_stages: int

    @classmethod
    def of(cls, config: dict) -> Point:
        return cls(tuple(config["kwargs"].items()), int(config["num_warps"]), int(config["num_stages"]))

    @property
    def label(self) -> str:
        kw = ",".join(f"{k}={v}" for k, v in self.kwargs)
        return f"{kw},num_warps={self.num_warps},num_stages={self.num_stages}".lstrip(",")

    def to_json(self) -> dict:
        return {"kwargs": dict(self.kwargs), "num_warps": self.num_warps, "num_stages": self.num_stages}


def step(spec, stock: Variant, incumbent: Variant, candidates: list[Variant], admit, backend, timing,
         min_gain: float) -> tuple[list[dict], Variant | None]:
    """One comparison (stock, the incumbent, the candidates): the candidates' rows against the incumbent, and
    the fastest admissible one faster than it (None where none is)."""
    seen = {stock.key, incumbent.key}
    fresh = [v for v in candidates if v.key not in seen and not seen.add(v.key)]
    if not fresh:
        return [], None
    lineup = [stock, *([incumbent] if incumbent is not stock else []), *fresh]
    inc = lineup.index(incumbent)
    cmp = backend.compare(spec, lineup, timing)
    if not cmp.baseline.valid:
        raise ChronosError(f"{spec.kernel}: stock invalid ({cmp.baseline.reason})")
    rows = [{"action": "+".join(v.actions), **time_row(cmp, i, timing, min_gain, against=inc)}
            for i, v in enumerate(lineup) if i > inc]
    ok = [(r["ratio"], v) for r, v in zip(rows, fresh, strict=True) if r["verdict"] == FASTER and admit(r)]
    return rows, (min(ok, key=lambda rv: rv[0])[1] if ok else None)


def walk(spec, stock: Variant, start: tuple[Point, Variant], compiler, admit, backend, timing,
         min_gain: float, steps: int) -> tuple[Variant, list[dict]]:
    """From `start` (a point and its variant), at most `steps` moves, then the v2 PTX actions on top of
    where it stopped (one more comparison); the end and the trace (per step its candidates and choice)."""
    entry = compiler.entry(spec)
    point, current = start
    seen = {point.label, Point.of(entry["stock"]).label}
    trace = []
    for _ in range(steps):
        points = [p for p in compiler.neighbours(entry, point) if p.label not in seen]
        seen.update(p.label for p in points)
        got = compiler.variants(spec, points)
        cands = [(p, v) for p in points if isinstance(v := got[p.label], Variant)]
        others = [{"action": PREFIX + p.label, **got[p.label]} for p in points
                  if isinstance(got[p.label], dict)]
        rows, chosen = step(spec, stock, current, [v for _, v in cands], admit, backend, timing, min_gain)
        trace.append({"from": point.label, "candidates": rows + others,
                      "chosen": "+".join(chosen.actions) if chosen else "stop"})
        if chosen is None:
            break
        point, current = next((p, v) for p, v in cands if v is chosen)
    if current is not stock:
        rows, chosen = step(spec, stock, current, on_top(spec, current), admit, backend, timing, min_gain)
        trace.append({"from": "+".join(current.actions), "ptx_on_top": True, "candidates": rows,
                      "chosen": "+".join(chosen.actions) if chosen else "stop"})
        current = chosen or current
    return current, trace


def coordesc_root(folder: Path, spec) -> tuple[Point, Variant] | None:
    """Coordinate descent's config and kernel (data of stage knob_anchors), where it moved from stock's."""
    if not (folder / "anchors.json").is_file():
        return None
    entry = anchor_entry(folder, spec)
    variants, _ = anchor_variants(folder, spec, entry)
    if "coordesc" not in variants:
        return None
    return Point.of(entry["coordesc"]), variants["coordesc"]


def _admit_valid(row: dict) -> bool:
    return bool(row.get("valid"))


def walk_kernel(spec, folder: Path, prior: Variant | None, compiler, backend, timing, min_gain: float,
                steps: int) -> dict:
    """One kernel: the walk from stock's config (strict) and from coordinate descent's (within tolerance),
    then their ends beside the earlier v3 winner and coordinate descent's kernel, chosen and confirmed."""
    stock_ptx = read_ptx(folder / "specs.json", spec)
    if skipped := racy(spec, stock_ptx):
        return skipped
    stock = Variant(spec, stock_ptx, ())
    entry = root_as_recorded(compiler.entry(spec), getattr(backend, "not_after", None))
    coordesc = coordesc_root(folder, spec)
    row: dict = {"kernel": spec.kernel, "walk_root": entry is not None,
                 "prior": list(prior.actions) if prior is not None else None}
    own = walk_end = coordesc_end = None
    if entry is not None:
        start = (Point.of(entry["stock"]), stock)
        walk_end, row["walk"] = walk(spec, stock, start, compiler, bit_exact, backend, timing, min_gain,
                                     steps)
        own = walk_end if walk_end is not stock else None
        if coordesc is not None:
            coordesc_end, row["coordesc_walk"] = walk(spec, stock, coordesc, compiler, _admit_valid, backend,
                                                      timing, min_gain, steps)
    named = {"prior": prior, "walk": own, "coordesc": coordesc[1] if coordesc else None,
             "coordesc_walk": coordesc_end if coordesc and coordesc_end is not coordesc[1] else None}
    return {**row, **judged(spec, stock, named, backend, timing, min_gain)}


def root_as_recorded(entry: dict | None, recorded_at: str | None) -> dict | None:
    """The kernel's walk root, unless replay answers a part recorded before make_walk_roots added it
    (`rooted` later than the part's `recorded_at`): that part walked nothing, and replays so."""
    if entry is None or not recorded_at or not entry.get("rooted"):
        return entry
    rooted, recorded = (datetime.fromisoformat(t) for t in (entry["rooted"], recorded_at))  # 3.11 reads "Z"
    return None if rooted > recorded else entry


def _lineup(stock: Variant, named: dict[str, Variant | None]) -> tuple[list[Variant], dict[str, int]]:
    """Stock and the named variants, each distinct one once: the lineup and name -> its index."""
    lineup, where = [stock], {}
    for name, v in named.items():
        if v is None:
            continue
        i = next((j for j, u in enumerate(lineup) if u.key == v.key), None)
        if i is None:
            lineup.append(v)
            i = len(lineup) - 1
        where[name] = i
    return lineup, where


def judged(spec, stock: Variant, named: dict[str, Variant | None], backend, timing, min_gain: float) -> dict:
    """The choosing comparison (stock and every named contender), then the confirming one (stock, the
    chosen, coordinate descent's kernel and the walk's end from it)."""
    none = {"best": {"actions": [], "verdict": "none"}, "speedup": 1.0, "with_coordesc": 1.0}
    lineup, where = _lineup(stock, named)
    if len(lineup) == 1:
        return none
    cmp = backend.compare(spec, lineup, timing)
    if not cmp.baseline.valid:
        return {"error": f"stock invalid ({cmp.baseline.reason})"}
    first = {n: time_row(cmp, i, timing, min_gain) for n, i in where.items()}

    def fastest(names: tuple[str, ...]) -> str | None:
        won = [n for n in names if n in first and first[n]["verdict"] == FASTER and bit_exact(first[n])]
        return min(won, key=lambda n: first[n]["ratio"]) if won else None

    mine, anyone = fastest(("prior", "walk")), fastest(("prior", "walk", "coordesc", "coordesc_walk"))
    again = {"chronos": named[mine] if mine else None, "with_coordesc": named[anyone] if anyone else None,
             "coordesc": named["coordesc"], "coordesc_walk": named["coordesc_walk"]}
    lineup2, where2 = _lineup(stock, again)
    out = {"choosing": {n: _brief(r) for n, r in first.items()}, "chosen": {"chronos": mine,
                                                                            "with_coordesc": anyone}}
    if len(lineup2) == 1:
        return {**out, **none}
    cmp2 = backend.compare(spec, lineup2, timing)
    if not cmp2.baseline.valid:
        return {"error": f"stock invalid ({cmp2.baseline.reason})"}
    confirm = {n: _brief(time_row(cmp2, i, timing, min_gain)) for n, i in where2.items()}
    if "coordesc_walk" in where2:
        on = time_row(cmp2, where2["coordesc_walk"], timing, min_gain, against=where2["coordesc"])
        confirm["on_coordesc"] = _brief(on)
    best = confirm.get("chronos") or {"actions": [], "verdict": "none"}
    return {**out, "confirming": confirm, "best": best, "speedup": _speedup(confirm.get("chronos")),
            "with_coordesc": _speedup(confirm.get("with_coordesc"))}


def _brief(r: dict) -> dict:
    keep = ("actions", "valid", "reason", "ratio", "ci", "verdict", "time_ms")
    return {k: r[k] for k in keep if k in r}


def _speedup(r: dict | None, exact: bool = True) -> float:
    """stock / contender where it was confirmed faster (and bit-exact when `exact`), else 1.0."""
    if not r or r.get("verdict") != FASTER or (exact and not bit_exact(r)):
        return 1.0
    return 1.0 / r["ratio"]


def on_coordesc(row: dict) -> float | None:
    """The walk from coordinate descent's config (with PTX on top) over coordinate descent's kernel, in the
    confirming comparison (1.0 where the walk kept it, or was not faster); None where no coordesc anchor."""
    if row.get("chosen") is None or "coordesc" not in row.get("choosing", {}):
        return None
    return _speedup((row.get("confirming") or {}).get("on_coordesc"), exact=False)


def walk_summary(rows: list[dict]) -> dict:
    """Counts; the share of the strict walks' timed configs that kept stock's bits; the geomean of Chronos
    v3's confirmed strict speedups after the walk (1.0 where none);
    with coordinate descent's configs admitted where bit-exact; how many walks moved and how far; the walk
    from coordinate descent's config over its kernel (`v3_on_coordesc`)."""
    done = [r for r in rows if "best" in r]
    moved = [r for r in done if r.get("walk") and r["walk"][0]["chosen"] != "stop"]
    on = [s for s in map(on_coordesc, done) if s is not None]
    timed = [c for r in done for t in r.get("walk", []) if not t.get("ptx_on_top") for c in t["candidates"]
             if "ratio" in c]
    return {"kernels": len(rows), "measured": len(done),
            "exact_share": sum(map(bit_exact, timed)) / len(timed) if timed else None,
            "faster": sum(r["best"].get("verdict") == FASTER for r in done),
            "time_geomean": geomean([r["speedup"] for r in done]) if done else None,
            "with_coordesc": geomean([r["with_coordesc"] for r in done]) if done else None,
            "walked": sum(bool(r.get("walk_root")) for r in done), "moved": len(moved),
            "steps": sum(sum(t["chosen"] != "stop" and not t.get("ptx_on_top") for t in r["walk"])
                         for r in moved),
            "chose_walk": sum((r.get("chosen") or {}).get("chronos") == "walk" for r in done),
            "v3_on_coordesc": {"kernels": len(on), "faster": sum(s > 1.0 for s in on),
                               "time_geomean": geomean(on) if on else None}}
