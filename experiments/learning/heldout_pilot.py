"""Leave-one-workload-out on the headroom census (#14, a pilot): does a policy pick better single actions than
the best fixed action chosen on the other workloads?

    python experiments/learning/heldout_pilot.py [--parts data/headroom] [--checkpoint
    models/checkpoint_best.pt]

Everything comes from recorded H200 comparisons, nothing is measured or estimated: step 0 of each headroom
search (data/headroom) timed the baseline and every legal single action of the v2 space side by side, so
any single-action choice on those kernels has a measured outcome. An action's gain on a kernel is
log(1 / ratio) when its verdict was `faster`, else 0 (what deploys: the baseline stays). Per held-out
workload (each captured workload and the LLM-size suite in turn):
  fixed   the single action with the largest summed gain over the *other* workloads' kernels
  policy  the first action of the pipeline's policy (its greedy decode on this CPU; `stop` gains 0)
  oracle  per kernel the best single action of the census
  greedy  the headroom search's final set, judged in its last comparison (multi-step: context, not a rival)
and the policy's share of the oracle's gain and of the fixed-to-oracle gap. Two limits, printed again at the
end: a few kernels per workload, and the oracle is the best of ~30 contenders in one comparison, which
favours it (the winner's curse that tune's confirmation guards against).
"""

from __future__ import annotations

import argparse
import json
import math
from collections import defaultdict
from pathlib import Path

from chronos.kernels.spec import load_module, load_specs
from chronos.rl.checkpoint import load_model
from chronos.rl.decode import KernelSpace, greedy_decode


def gains(part: dict) -> dict[str, float]:
    """Single action -> its measured gain on the kernel (step 0 of its headroom search)."""
    out = {}
    for c in part["trace"][0]["candidates"]:
        ok = c.get("verdict") == "faster" and c.get("ratio")
        out[c["action"]] = math.log(1.0 / c["ratio"]) if ok else 0.0
    return out


def greedy_gain(part: dict) -> float:
    b = part["best"]
    return math.log(1.0 / b["ratio"]) if b["actions"] and b.get("verdict") == "faster" else 0.0


def policy_first(policy, kernels: Path, family: str, kernel: str) -> str:
    specs_json = kernels / family / "specs.json"
    spec = next(s for s in load_specs(specs_json) if s.kernel == kernel)
    space = KernelSpace(load_module(specs_json, spec), True, policy.action_space, launch=spec)
    seq = greedy_decode([space], policy, 1)[0].sequence
    return seq[0] if seq else "stop"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--parts", type=Path, default=Path("data/headroom"))
    ap.add_argument("--kernels", type=Path, default=Path("data/kernels"))
    ap.add_argument("--checkpoint", type=Path, default=Path("models/checkpoint_best.pt"))
    args = ap.parse_args()
    policy = load_model(args.checkpoint).eval()
    rows = defaultdict(list)  # workload -> [(kernel, gains, greedy gain, policy's action)]
    for part in sorted(args.parts.rglob("*.json")):
        family = str(part.parent.relative_to(args.parts))
        rec = json.loads(part.read_text())
        rows[family].append((rec["kernel"], gains(rec), greedy_gain(rec),
                             policy_first(policy, args.kernels, family, rec["kernel"])))
    print(f"policy: {args.checkpoint} ({policy.action_space.name} space); kernels: "
          f"{ {f: len(r) for f, r in rows.items()} }")
    print(f"{'held out':16s} {'n':>2s} {'fixed (chosen on the rest)':34s} {'fixed':>7s} {'policy':>7s} "
          f"{'oracle':>7s} {'greedy':>7s} {'policy/oracle':>13s} {'gap closed':>10s}")
    total = defaultdict(float)
    for held in sorted(rows):
        train = defaultdict(float)
        for fam, rs in rows.items():
            if fam != held:
                for _, g, _, _ in rs:
                    for a, v in g.items():
                        train[a] += v
        fixed = max(train, key=train.get)
        s = {"fixed": sum(g.get(fixed, 0.0) for _, g, _, _ in rows[held]),
             "policy": sum(g.get(p, 0.0) for _, g, _, p in rows[held]),
             "oracle": sum(max(g.values(), default=0.0) for _, g, _, _ in rows[held]),
             "greedy": sum(gg for _, _, gg, _ in rows[held])}
        for k, v in s.items():
            total[k] += v
        share = s["policy"] / s["oracle"] if s["oracle"] else float("nan")
        gap = s["oracle"] - s["fixed"]
        closed = (s["policy"] - s["fixed"]) / gap if gap > 1e-12 else float("nan")
        print(f"{held:16s} {len(rows[held]):2d} {fixed:34s} {s['fixed']:7.4f} {s['policy']:7.4f} "
              f"{s['oracle']:7.4f} {s['greedy']:7.4f} {share:13.1%} {closed:10.1%}")
        for kernel, g, _, p in rows[held]:
            best = max(g, key=g.get) if g else "-"
            print(f"    {kernel[:56]:56s} policy {p:24s} {g.get(p, 0.0):7.4f}  oracle {best:26s} "
                  f"{g.get(best, 0.0):7.4f}")
    print(f"{'all (sum of logs)':16s} {'':2s} {'':34s} {total['fixed']:7.4f} {total['policy']:7.4f} "
          f"{total['oracle']:7.4f} {total['greedy']:7.4f} {total['policy'] / total['oracle']:13.1%}")
    print("limits: 3-4 kernels per workload; the oracle is the best of ~30 contenders in one comparison "
          "(biased up); gains are natural logs of time ratios, 0 where the verdict was not `faster`")


if __name__ == "__main__":
    main()
