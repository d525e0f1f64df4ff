"""How much of the held-out evaluation rests on L2 evict_last picks? (#14; nothing is measured)

    python experiments/learning/heldout_without_l2_last.py [--heldout reports/heldout.json]

experiments/measurement/paired_vs_crowded.py found that L2 evict_last winners lose part of their gain once
other kernels run between their launches, which points at lines that outlive the timing flush
(experiments/measurement/l2_demote.py tests that on a GPU). Until that is measured, this says what the
held-out numbers would be if those gains were artifacts: per method the summed side-by-side log-gain, the
part of it from picks with an L2 evict_last hint, and the scores (oracle share, fixed->oracle gap closed,
geomean) with every such pick counted as the baseline (gain 0), as stage heldout computes them.
"""

from __future__ import annotations

import argparse
import json
import math
from pathlib import Path

from chronos.rl.heldout import SHARED, methods_in, picks_of, side_by_side_gain, totals

L2_LAST = "l2_evict_last"


def without_l2_last(row: dict) -> dict:
    """The row's side-by-side gains with each method's gain set to 0 where its pick(s) hold an L2 evict_last
    hint (beam: the best of its picks without one, from the comparison's own ratios)."""
    sbs = row["side_by_side"]
    out = {}
    for m in methods_in(row["actions"]):
        picks = [a for a in picks_of(row["actions"], m) if L2_LAST not in a]
        gains = [_gain(sbs, a) for a in picks]
        out[m] = max(gains + [0.0])
    return out


def _gain(sbs: dict, action: str) -> float:
    """What the side-by-side comparison deploys for `action` (stage heldout's rule): -log ratio if faster."""
    if sbs["verdict"].get(action) != "faster":
        return 0.0
    return -math.log(sbs["ratio"][action])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--heldout", type=Path, default=Path("reports/heldout.json"))
    args = ap.parse_args()
    rows = [r for r in json.loads(args.heldout.read_text())["kernels"] if "gain" in r.get("side_by_side", {})]
    full, cut = totals(rows, side_by_side_gain), totals(rows, without_l2_last)
    print(f"{len(rows)} held-out kernels timed side by side")
    print(f"{'method':8s} {'log-gain':>9s} {'of it L2 evict_last':>20s} {'geomean':>8s} {'without':>8s}")
    for m, g in full["gain"].items():
        c = cut["gain"][m]
        print(f"{m:8s} {g:9.4f} {g - c:20.4f} {full['time_geomean'][m]:8.4f} {cut['time_geomean'][m]:8.4f}")
    for m in (m for m in SHARED if m in full):
        print(f"{m:8s} oracle share {full[m]['oracle_share']:.3f} -> {cut[m]['oracle_share']:.3f}; "
              f"gap closed {full[m]['gap_closed']:.3f} -> {cut[m]['gap_closed']:.3f}")
    oracle_last = sum(L2_LAST in r["actions"]["oracle"] for r in rows)
    fixed = {r["actions"]["fixed"] for r in rows}
    print(f"oracle picks with an L2 evict_last hint: {oracle_last} of {len(rows)}; fixed action(s): "
          f"{', '.join(sorted(fixed))}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
