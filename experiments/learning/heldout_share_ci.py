"""How sure are the held-out scores? A bootstrap over the held-out kernels (#14; nothing is measured)

    python experiments/learning/heldout_share_ci.py [--heldout reports/heldout.json] [--resamples 10000]
    [--seed 0]

Stage heldout scores each method by its summed side-by-side log-gain over the held-out kernels (one H200
comparison per kernel, its picks beside the baseline). Which kernels land in the held-out set is itself a
draw, so this resamples the kernels with replacement and recomputes, per method, the share of the oracle's
log-gain, the share of the fixed->oracle gap closed and the geomean speedup: the median and the 95%
percentile interval. It also gives, paired on the same resamples, the difference of two methods' shares
(`--pairs`, default beam vs fixed_beam and policy vs fixed): an interval containing 0 means the kernels do
not tell the two apart.
"""

from __future__ import annotations

import argparse
import json
import math
from pathlib import Path

import numpy as np

from chronos.rl.heldout import methods_in, side_by_side_gain


def gains(rows: list[dict]) -> tuple[list[str], np.ndarray]:
    """(methods, kernels x methods array of side-by-side log-gains) over the rows that were timed."""
    done = [r for r in rows if "gain" in r.get("side_by_side", {})]
    methods = methods_in(done[0]["actions"])
    return methods, np.array([[side_by_side_gain(r)[m] for m in methods] for r in done])


def scores(g: np.ndarray, methods: list[str]) -> dict[str, np.ndarray]:
    """Per method, over resampled gain sums g (resamples x methods): share, gap closed, geomean."""
    o, f = g[:, methods.index("oracle")], g[:, methods.index("fixed")]
    out = {}
    with np.errstate(divide="ignore", invalid="ignore"):
        for i, m in enumerate(methods):
            out[f"{m}.oracle_share"] = g[:, i] / o
            out[f"{m}.gap_closed"] = (g[:, i] - f) / (o - f)
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--heldout", type=Path, default=Path("reports/heldout.json"))
    ap.add_argument("--resamples", type=int, default=10000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--pairs", nargs="*",
                    default=["beam:fixed_beam", "policy:fixed", "bc:fixed", "beam:fixed"])
    args = ap.parse_args(argv)
    methods, g = gains(json.loads(args.heldout.read_text())["kernels"])
    n = len(g)
    rng = np.random.default_rng(args.seed)
    idx = rng.integers(0, n, size=(args.resamples, n))
    sums = g[idx].sum(axis=1)  # resamples x methods
    point = scores(g.sum(axis=0, keepdims=True), methods)
    boot = scores(sums, methods)
    print(f"{n} held-out kernels timed side by side; {args.resamples} bootstrap resamples of the kernels")
    print(f"{'method':12s} {'geomean':>8s} {'oracle share [95%]':>26s} {'gap closed [95%]':>26s}")
    for i, m in enumerate(methods):
        geo = math.exp(g[:, i].mean())
        cells = []
        for k in ("oracle_share", "gap_closed"):
            b = boot[f"{m}.{k}"]
            b = b[np.isfinite(b)]
            lo, hi = np.percentile(b, [2.5, 97.5])
            cells.append(f"{100 * point[f'{m}.{k}'][0]:6.1f}% [{100 * lo:6.1f}, {100 * hi:6.1f}]")
        print(f"{m:12s} {geo:8.4f} {cells[0]:>26s} {cells[1]:>26s}")
    for pair in args.pairs:
        a, b = pair.split(":")
        if a not in methods or b not in methods:
            continue
        d = boot[f"{a}.oracle_share"] - boot[f"{b}.oracle_share"]
        d = d[np.isfinite(d)]
        lo, hi = np.percentile(d, [2.5, 97.5])
        pt = point[f"{a}.oracle_share"][0] - point[f"{b}.oracle_share"][0]
        wins = int(np.sum(g[:, methods.index(a)] > g[:, methods.index(b)] + 1e-12))
        loses = int(np.sum(g[:, methods.index(a)] < g[:, methods.index(b)] - 1e-12))
        print(f"{a} - {b}: oracle share {100 * pt:+.1f} points [{100 * lo:+.1f}, {100 * hi:+.1f}]; "
              f"per kernel {a} gains more on {wins}, less on {loses}, ties {n - wins - loses}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
