"""Where is the ceiling of action space v3 on the captured kernels? (#28: "a census in time first ... says
where the ceiling of the joint space is"; a target may be closed as unreachable by it.)

Per kernel of the knob stages' selection, from the committed reports (replayed from the store, no GPU):
- `reached`: Chronos v3's confirmed winner from the latest stage that measured the kernel (knob_walk, else
  knob_blocks, else knob_ptx, else knob_census's one knob: a kernel the later stages have not reached yet),
  the per-kernel number of the targets;
- `best_measured`: the fastest bit-exact variant any stage timed beside stock — one compile knob value
  (knob_census), one block move or PTX on top of it (knob_blocks), PTX on a knob root (knob_ptx), one v2
  PTX action family (census); variants that changed the bits are not timed, so they are not in it;
- `product_bound`: the best knob value, best block move and best PTX action multiplied, as if their gains
  added up independently — an optimistic bound for their combinations, most of which no comparison timed.
  It over-counts where a stage's rows stand on an earlier winner (PTX on the knob root, the block step's
  prior winner): a large knob gain is counted up to three times (flex_decode_long's templates: 1.61), so it
  bounds from above, never below.
Ratios are stock / variant from the variant's comparison beside stock; 1 where nothing was faster. Per
workload the geomean of each over its kernels.

With --steps, what those per-kernel numbers can give a workload's step at most (#28's end-to-end targets):
each kernel weighs its GPU time in the captured steps (chronos.kernels.profile.measured_gpu_ms: launches x
the tune's stock time); `triton_reached` / `triton_best` apply every measured kernel's reached / best
measured speedup to its weight (the others at 1.0), `triton_bound` also gives every timed kernel no stage
measured the workload's largest best-measured speedup (an optimistic guess for what is unmeasured);
`triton_strict_bound` likewise, but the kernels the knob stages skip for their float atomics at 1.0: their
outputs change from run to run, so no variant of them can be shown bit-exact and strict mode never deploys
one (the strict space's bound); `triton_product_bound` gives every measured kernel its `product_bound` and
the unmeasured the largest of those (float atomics at 1.0 again): the loosest bound, the one that can
prove a step target out of this space's reach; the `step_*` columns put each into the profile's Triton
share of the step's GPU time (Amdahl, every phase together): an upper bound of the step, since the step's
wall time is at least its GPU time.
`triton_deployed` / `step_deployed`: `reached` of only the kernels whose winner Chronos v3's DB deploys
(chronos.tuning.config_db.write_configs, as `chronos tune --merge-only --configs-from` writes it; the others
at 1.0; shapes of one PTX whose winners differ at the speedup of the one variant that won at each,
chronos.tuning.shapes): what the end-to-end step can show at most (scripts/e2e_one_process.py measures it).

    python experiments/action_space/v3_ceiling.py [--reports reports] [--kernels] [--steps]
        [--leave-out-actions ACTION|GROUP...]
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "src"))

from chronos.report.walk import latest_speedups

STAGES = {"knob_census": "knob", "knob_blocks": "block", "knob_ptx": "ptx"}
"""Stages whose candidate rows are each timed against stock (their `ratio` is variant / stock)."""
LATEST = ("knob_walk", "knob_blocks", "knob_ptx", "knob_census")
"""v3's stages, latest first: a kernel's winner is the latest one's that measured it."""


def _speedup(rows: list[dict]) -> float:
    """The best stock / variant of the valid timed rows (1 where none was faster)."""
    return max([1.0, *(1 / r["ratio"] for r in rows if r.get("valid", True) and r.get("ratio"))])


def reached(reports: Path) -> dict[tuple[str, str], float]:
    """(family, kernel) -> v3's confirmed speedup from the latest stage with a row for it that is not an error
    (kernels no stage measured, float atomics among them, are left out)."""
    stages = {stage: json.loads((reports / f"{stage}.json").read_text()) for stage in reversed(LATEST)}
    return {key: speedup for key, (_, speedup) in latest_speedups(stages).items()}


def kernel_ceilings(reports: Path) -> dict[tuple[str, str], dict]:
    """(family, kernel) -> {reached, knob, block, ptx, v2}: the kernels some v3 stage measured."""
    out = {key: {"reached": r, "knob": 1.0, "block": 1.0, "ptx": 1.0, "v2": 1.0}
           for key, r in reached(reports).items()}
    for stage, kind in STAGES.items():
        for k in json.loads((reports / f"{stage}.json").read_text())["kernels"]:
            if (k["family"], k["kernel"]) in out:
                out[(k["family"], k["kernel"])][kind] = _speedup(k.get("candidates") or [])
    for k in json.loads((reports / "census.json").read_text())["kernels"]:
        if (k["family"], k["kernel"]) in out:
            out[(k["family"], k["kernel"])]["v2"] = _speedup(list((k.get("families") or {}).values()))
    return out


def summarize(ceilings: dict) -> dict[str, dict]:
    by_family: dict[str, list[dict]] = defaultdict(list)
    for (family, _), c in ceilings.items():
        ptx = max(c["ptx"], c["v2"])
        by_family[family].append({"reached": c["reached"], "best_measured": max(c.values()),
                                  "product_bound": c["knob"] * c["block"] * ptx})
    by_family["all"] = [r for f in list(by_family) for r in by_family[f]]
    return {f: {"kernels": len(rows), **{k: math.exp(sum(math.log(r[k]) for r in rows) / len(rows))
                                         for k in rows[0]}} for f, rows in by_family.items()}


def triton_share(folder: Path) -> float | None:
    """The Triton kernels' share of the captured step's GPU time, every phase of profile.json together."""
    profile = folder / "profile.json"
    if not profile.is_file():
        return None
    phases = json.loads(profile.read_text())["phases"].values()
    total = sum(p["total_us"] for p in phases)
    return sum(p["triton_us"] for p in phases) / total if total else None


def deployed(kernels: Path, family: str, parts_root: Path, reached: dict[str, float],
             leave_out: frozenset[str] = frozenset()) -> dict | None:
    """Kernel -> the speedup the v3 DB deploys for it: its winner's `reached` (a kernel another shape's
    entry serves included), or, at shapes of one PTX whose winners differ, the one variant that won at
    every shape, its speedup there; None where the workload has no knob parts. `leave_out`: PTX actions
    whose winners the DB leaves out whole (`chronos tune --leave-out-actions`)."""
    import tempfile

    from chronos.tuning.config_db import DB_STAGES, latest_parts, write_configs
    from chronos.tuning.shapes import measured_rows

    folders = [parts_root / stage / family for stage in DB_STAGES]
    parts = latest_parts(folders)
    if not parts:
        return None
    with tempfile.TemporaryDirectory() as tmp:
        got = write_configs(kernels / family, parts, Path(tmp) / "v3.sqlite", leave_out,
                            measured=measured_rows(folders))
    ships = {json.loads(p.read_text())["kernel"] for p in parts} - set(got["left_out"])
    return {k: 1.0 / got["shared_variant"][k]["ratio"] if k in got["shared_variant"] else r
            for k, r in reached.items() if k in ships}


def float_atomics(reports: Path) -> dict[str, set[str]]:
    """Per family the kernels stage knob_census skipped for their float atomics."""
    out: dict[str, set[str]] = defaultdict(set)
    for k in json.loads((reports / "knob_census.json").read_text())["kernels"]:
        if str(k.get("error", "")).startswith("skipped: float atomics"):
            out[k["family"]].add(k["kernel"])
    return out


def step_bounds(ceilings: dict, kernels: Path, parts_root: Path | None = None,
                atomics: dict[str, set[str]] | None = None,
                leave_out: frozenset[str] = frozenset()) -> dict[str, dict]:
    """Per workload: the Triton time and step speedups the measured kernels' numbers allow at most
    (`atomics`: per family the kernels outside the strict space, float_atomics)."""
    from chronos.kernels.profile import measured_gpu_ms, weighted_speedup
    from chronos.report.captured import amdahl_bound
    atomics = atomics or {}
    out = {}
    for family in sorted({f for f, _ in ceilings}):
        weight = measured_gpu_ms(kernels / family)
        mine = {k: c for (f, k), c in ceilings.items() if f == family}
        if not weight:
            continue
        reached = {k: c["reached"] for k, c in mine.items()}
        best = {k: max(c.values()) for k, c in mine.items()}
        outside = dict.fromkeys(atomics.get(family, ()), 1.0)
        row = {"measured_share": sum(weight.get(k, 0.0) for k in mine) / sum(weight.values()),
               "triton_reached": weighted_speedup(weight, reached),
               "triton_best": weighted_speedup(weight, best),
               "triton_bound": weighted_speedup(weight, best, max(best.values())),
               "triton_strict_bound": weighted_speedup(weight, {**outside, **best}, max(best.values()))}
        product = {k: c["knob"] * c["block"] * max(c["ptx"], c["v2"]) for k, c in mine.items()}
        row["triton_product_bound"] = weighted_speedup(weight, {**outside, **product}, max(product.values()))
        ships = deployed(kernels, family, parts_root, reached, leave_out) if parts_root else None
        row["triton_deployed"] = weighted_speedup(weight, ships) if ships is not None else None
        share = triton_share(kernels / family)
        for k in ("reached", "best", "bound", "strict_bound", "product_bound", "deployed"):
            if row[f"triton_{k}"] is None:
                row[f"step_{k}"] = None
                continue
            row[f"step_{k}"] = amdahl_bound(share, row[f"triton_{k}"]) if share is not None else None
        out[family] = {"triton_share": share, **row}
    return out


def print_steps(bounds: dict[str, dict]) -> None:
    cols = ("triton_share", "measured_share", "triton_reached", "triton_best", "triton_bound",
            "triton_strict_bound", "triton_product_bound", "triton_deployed", "step_reached", "step_best",
            "step_bound", "step_strict_bound", "step_product_bound", "step_deployed")
    print(f"{'workload':26} " + " ".join(f"{c:>14}" for c in cols))
    for family, b in bounds.items():
        print(f"{family:26} " + " ".join(f"{b[c]:14.4f}" if b[c] is not None else f"{'-':>14}" for c in cols))


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--reports", type=Path, default=ROOT / "reports")
    p.add_argument("--kernels", action="store_true", help="print every kernel's numbers too")
    p.add_argument("--steps", action="store_true", help="and what they give each workload's step at most")
    p.add_argument("--captured", type=Path, default=ROOT / "data" / "kernels", help="(--steps) the kernels")
    p.add_argument("--parts", type=Path, default=ROOT / "data",
                   help="(--steps) the knob stages' parts (<parts>/knob_walk/captured/<w>/...)")
    p.add_argument("--leave-out-actions", nargs="+", default=[], metavar="ACTION",
                   help="(--steps) `deployed` of the DB less the winners using these v2 actions or groups")
    args = p.parse_args()
    ceilings = kernel_ceilings(args.reports)
    if args.kernels:
        for (family, kernel), c in sorted(ceilings.items()):
            print(f"{family:16} {kernel[:60]:60} " + " ".join(f"{k}={v:.3f}" for k, v in c.items()))
    print(f"{'workload':26} kernels  reached  best_measured  product_bound")
    for family, s in summarize(ceilings).items():
        print(f"{family:26} {s['kernels']:7}  {s['reached']:.4f}   {s['best_measured']:.4f}         "
              f"{s['product_bound']:.4f}")
    if args.steps:
        from chronos.tuning.config_db import leave_out_actions

        print_steps(step_bounds(ceilings, args.captured, args.parts, float_atomics(args.reports),
                                leave_out_actions(args.leave_out_actions)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
