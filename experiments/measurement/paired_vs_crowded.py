"""Does a single action's measured gain depend on the comparison it is timed in? (#14)

    python experiments/measurement/paired_vs_crowded.py [--census data/census] [--headroom data/headroom]

Nothing is measured: both numbers come from the committed H200 searches. A census kernel's step-0 winner is
timed twice more after the step that chose it:
  paired   the census's judgement: the winner beside the baseline alone (2 contenders)
  crowded  headroom's step 1 (same kernel, same greedy first choice): the winner is the incumbent there,
           timed beside the baseline and every legal extension of it (7-35 contenders)
Same kernel, same PTX, same timing params (L2 flushed before every timed launch); only the company differs.
Prints per action family of the winner the median and mean of log(crowded / paired) (> 0: the gain shrinks
in a crowd) and each kernel's two ratios. A family whose gain shrinks while the others do not points at the
harness, not at the kernel: e.g. lines kept by an L2 evict_last hint that outlive the flush between two
launches of the same variant when nothing else runs in between.
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
from collections import defaultdict
from pathlib import Path


def pairs(census: Path, headroom: Path) -> dict[str, list[tuple[str, str, float, float, int]]]:
    """family of the winner -> [(kernel, action, paired ratio, crowded ratio, crowd size)]."""
    out = defaultdict(list)
    for part in sorted(census.rglob("*.json")):
        c = json.loads(part.read_text())
        h_part = headroom / part.relative_to(census)
        if not c.get("best", {}).get("actions") or not h_part.is_file():
            continue
        h = json.loads(h_part.read_text())
        action = c["best"]["actions"][0]
        if len(h["trace"]) < 2 or h["trace"][0]["chosen"] != action:
            continue
        crowded = h["trace"][1]["incumbent"]["ratio"]
        family = "l2_evict_last" if "l2_evict_last" in action else "other"
        crowd = len(h["trace"][1]["candidates"])
        out[family].append((c["kernel"], action, c["best"]["ratio"], crowded, crowd))
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--census", type=Path, default=Path("data/census"))
    ap.add_argument("--headroom", type=Path, default=Path("data/headroom"))
    args = ap.parse_args()
    for family, rows in sorted(pairs(args.census, args.headroom).items()):
        shrink = [math.log(crowded / paired) for _, _, paired, crowded, _ in rows]
        print(f"{family:14s} {len(rows):3d} kernels: log(crowded/paired) median "
              f"{statistics.median(shrink):+.4f} mean {statistics.mean(shrink):+.4f}; "
              f"crowded faster than paired on {sum(s < 0 for s in shrink)}")
        for kernel, action, paired, crowded, n in rows:
            print(f"    {kernel[:56]:56s} {action:26s} paired {paired:.4f} crowded {crowded:.4f} ({n + 1})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
