"""Is the fixed-to-oracle gap of stage heldout resolved by the measurements, kernel by kernel? (#14)

    python experiments/learning/heldout_noise.py [--heldout reports/heldout.json] [--store STORE.sqlite]

Nothing is measured: each held-out kernel's side-by-side comparison of its picks (stage heldout, timed on
the H200) is read back from the store, and the oracle's pick is compared with the fixed action's pick
*directly* (their paired ratio with its bootstrap interval, the timing params' confidence and
search.greedy.min_gain), as is the policy's pick with the oracle's. Prints per family and in all:
  oracle_vs_fixed  kernels where the oracle's pick is resolved faster than the fixed pick / no difference /
                   slower / the two picks are the same action
  policy_vs_oracle the same for the policy's greedy pick against the oracle's
and the summed log-gain of the oracle over fixed on the kernels where it is resolved. When most of the gap
lies on kernels where the two picks cannot be told apart, no learner can be shown to close it there.
"""

from __future__ import annotations

import argparse
import json
import math
from collections import Counter, defaultdict
from pathlib import Path

from chronos.config import load
from chronos.kernels.spec import load_module
from chronos.measure.backend import ReplayBackend
from chronos.rl.heldout import distinct_picks
from chronos.search.runs import kernels_of
from chronos.search.timed import TimedEvaluator


def pair(cmp, idx: dict, a: str, b: str, cfg) -> str:
    """a against b in one comparison: faster | slower | no_difference | same (one contender) | invalid.
    Stop, and an action not legal on the kernel (never timed, deploys nothing), are the baseline."""
    i, j = idx.get(a, 0), idx.get(b, 0)
    if i == j:
        return "same"
    return cmp.verdict(i, cfg.timing, cfg.search.greedy.min_gain, against=j).split(":")[0]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--heldout", type=Path, default=Path("reports/heldout.json"))
    ap.add_argument("--store", type=Path, default=Path("data/store/measurements.sqlite"))
    ap.add_argument("--params", type=Path, default=Path("params.yaml"))
    ap.add_argument("--kernels", type=Path, default=Path("data/kernels"))
    args = ap.parse_args()
    cfg = load(args.params)
    rep = json.loads(args.heldout.read_text())
    specs = {s.kernel: (sj, s) for _, sj, s in kernels_of(args.kernels, cfg.search.census.families)}
    counts: dict[str, dict[str, Counter]] = defaultdict(lambda: defaultdict(Counter))
    resolved_gap = defaultdict(float)
    with ReplayBackend(args.store, cfg.measure) as backend:
        for row in rep["kernels"]:
            sj, spec = specs[row["kernel"]]
            picks = distinct_picks(row["actions"])  # the comparison stage heldout timed
            ev = TimedEvaluator(spec, load_module(sj, spec), backend, cfg.timing, cfg.search.greedy.min_gain)
            cmp, where = ev.compare([(a,) for a in picks])
            idx = {a: i for a, i in zip(picks, where, strict=True) if i is not None}
            acts, fam = row["actions"], row["family"]
            ovf = pair(cmp, idx, acts["oracle"], acts["fixed"], cfg)
            pvo = pair(cmp, idx, acts["policy"], acts["oracle"], cfg)
            for key in (fam, "all"):
                counts[key]["oracle_vs_fixed"][ovf] += 1
                counts[key]["policy_vs_oracle"][pvo] += 1
                if ovf == "faster":
                    g = row["side_by_side"]["gain"]
                    resolved_gap[key] += g["oracle"] - g["fixed"]
    gaps = defaultdict(float)
    for row in rep["kernels"]:
        g = row["side_by_side"]["gain"]
        gaps[row["family"]] += g["oracle"] - g["fixed"]
        gaps["all"] += g["oracle"] - g["fixed"]
    for key, c in counts.items():
        print(f"{key:16s} oracle_vs_fixed {dict(sorted(c['oracle_vs_fixed'].items()))}  "
              f"policy_vs_oracle {dict(sorted(c['policy_vs_oracle'].items()))}  "
              f"gap {100 * gaps[key]:.2f} log-%, of which resolved {100 * resolved_gap[key]:.2f}")
    share = resolved_gap["all"] / gaps["all"] if gaps["all"] > 0 else math.nan
    print(f"all: {share:.1%} of the summed fixed-to-oracle gap lies on kernels where the oracle's pick is "
          f"resolved faster than the fixed pick in the same comparison")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
