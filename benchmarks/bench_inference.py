"""Inference-path benchmark on one CPU thread.

1. parse + features + one policy forward on gemm_tile(8,8,8) (~750 lines of PTX); target <= 20 ms.
2. parse + emit of the largest Triton PTX in tests/corpus/triton/ (skipped with a message when absent).

Prints median and IQR in milliseconds over >= 200 repetitions (after warm-up), as a short table.

    python benchmarks/bench_inference.py [--reps 300]
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable
from pathlib import Path
from typing import NamedTuple

import torch

from chronos.actions import get_action_history, get_action_mask
from chronos.features.seed import extract_features
from chronos.kernels.gemm_tile import gemm_tile_ptx
from chronos.ptx import emit, parse
from chronos.rl.policy import TransformPolicy

ROOT = Path(__file__).resolve().parents[1]
TRITON_DIR = ROOT / "tests" / "corpus" / "triton"
TARGET_MS = 20.0


def timed(fn: Callable[[], object], reps: int, warmup: int = 10) -> tuple[float, float, float]:
    """(median, q1, q3) of fn's wall time in ms."""
    for _ in range(warmup):
        fn()
    samples = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        samples.append((time.perf_counter() - t0) * 1e3)
    q1, med, q3 = statistics.quantiles(samples, n=4)
    return med, q1, q3


class Pipeline(NamedTuple):
    ptx: str
    policy: TransformPolicy
    mask: torch.Tensor
    hist: torch.Tensor
    run: Callable[[], int]


def predict_case() -> Pipeline:
    """The timed pipeline: parse + features + one greedy policy forward on gemm_tile(8,8,8), one thread;
    bench_parser.py times the same call."""
    torch.set_num_threads(1)  # the target is for one CPU core
    torch.manual_seed(0)
    policy = TransformPolicy().eval()
    mask = torch.tensor(get_action_mask(()), dtype=torch.float32)
    hist = torch.tensor(get_action_history(()), dtype=torch.float32)
    ptx = gemm_tile_ptx(8, 8, 8)

    def predict_once() -> int:
        feats = torch.tensor(extract_features(parse(ptx)), dtype=torch.float32)
        return policy.get_greedy_action(feats, mask, hist)

    return Pipeline(ptx, policy, mask, hist, predict_once)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--reps", type=int, default=300, help="repetitions per measurement (>= 200)")
    args = ap.parse_args(argv)
    reps = max(args.reps, 200)
    ptx, policy, mask, hist, predict_once = predict_case()

    rows = []
    med, q1, q3 = timed(predict_once, reps)
    verdict = "ok" if med <= TARGET_MS else f"OVER {TARGET_MS:g} ms target"
    name = f"parse+features+forward gemm_tile(8,8,8), {len(ptx.splitlines())} lines"
    rows.append((name, med, q3 - q1, verdict))

    # The pieces, to see where the time goes.
    module = parse(ptx)
    feats = torch.tensor(extract_features(module), dtype=torch.float32)
    for name, fn in (("  parse only", lambda: parse(ptx)),
                     ("  features only", lambda: extract_features(module)),
                     ("  policy forward only", lambda: policy.get_greedy_action(feats, mask, hist))):
        m, a, b = timed(fn, reps)
        rows.append((name, m, b - a, ""))

    triton = sorted(TRITON_DIR.glob("*.ptx"), key=lambda p: p.stat().st_size) if TRITON_DIR.is_dir() else []
    if triton:
        big = triton[-1]
        text = big.read_text()
        m, a, b = timed(lambda: emit(parse(text)), reps, warmup=3)
        rows.append((f"parse+emit {big.name}, {len(text.splitlines())} lines", m, b - a, ""))
    else:
        rows.append((f"parse+emit largest Triton PTX: skipped, no *.ptx in {TRITON_DIR}", float("nan"),
                     float("nan"), "skipped"))

    width = max(len(r[0]) for r in rows)
    print(f"torch {torch.__version__}, threads={torch.get_num_threads()}, reps={reps}")
    print(f"{'benchmark':{width}s}  {'median ms':>9s}  {'IQR ms':>7s}  note")
    for name, m, iqr, note in rows:
        print(f"{name:{width}s}  {m:9.3f}  {iqr:7.3f}  {note}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
