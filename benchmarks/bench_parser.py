"""PTX parser/printer speed on one CPU thread (issue #11): median and per-line time over repeated runs.

Rows:
1. parse of gemm_tile(8,8,8) (~750 lines);
2. parse+emit of the largest Triton PTX in data/kernels/triton/ and in tests/corpus/triton/;
3. the inference pipeline of bench_inference.py: parse + features + one policy forward on gemm_tile(8,8,8)
   (skipped with --no-pipeline, which also skips importing torch).

    python benchmarks/bench_parser.py [--reps 50] [--no-pipeline]
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable
from pathlib import Path

from chronos.kernels.gemm_tile import gemm_tile_ptx
from chronos.ptx import emit, parse

ROOT = Path(__file__).resolve().parents[1]
TRITON_DIRS = (ROOT / "data" / "kernels" / "triton", ROOT / "tests" / "corpus" / "triton")


def timed(fn: Callable[[], object], reps: int, warmup: int = 3) -> tuple[float, float]:
    """(median, min) of fn's wall time in ms: the median is the headline, the min shows the noise floor."""
    for _ in range(warmup):
        fn()
    samples = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        samples.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(samples), min(samples)


def largest_ptx(folder: Path) -> Path | None:
    files = sorted(folder.glob("*.ptx"), key=lambda p: (p.stat().st_size, p.name)) if folder.is_dir() else []
    return files[-1] if files else None


def pipeline_case() -> tuple[str, str, Callable[[], object]]:
    """bench_inference's timed call (imported from there: both scripts time the same thing)."""
    from bench_inference import predict_case  # beside this script, so on sys.path when it runs

    case = predict_case()
    return "parse+features+forward gemm_tile(8,8,8)", case.ptx, case.run


def cases(with_pipeline: bool) -> list[tuple[str, str, Callable[[], object]]]:
    gemm = gemm_tile_ptx(8, 8, 8)
    out = [("parse gemm_tile(8,8,8)", gemm, lambda: parse(gemm))]
    for folder in TRITON_DIRS:
        big = largest_ptx(folder)
        if big is None:
            print(f"(no *.ptx in {folder}: skipped)")
            continue
        text = big.read_text()
        out.append((f"parse+emit {big.relative_to(ROOT)}", text, lambda text=text: emit(parse(text))))
        out.append((f"  parse only {big.name}", text, lambda text=text: parse(text)))
    if with_pipeline:
        out.append(pipeline_case())
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--reps", type=int, default=50, help="timed repetitions per row (after 3 warm-up runs)")
    ap.add_argument("--no-pipeline", action="store_true", help="skip the torch pipeline row")
    args = ap.parse_args(argv)
    rows = []
    for name, text, fn in cases(not args.no_pipeline):
        lines = len(text.splitlines())
        med, best = timed(fn, max(args.reps, 5))
        rows.append((name, lines, med, best, med * 1e3 / lines))
    width = max(len(r[0]) for r in rows)
    print(f"reps={args.reps}")
    print(f"{'benchmark':{width}s}  {'lines':>5s}  {'median ms':>9s}  {'min ms':>7s}  {'us/line':>7s}")
    for name, lines, med, best, per_line in rows:
        print(f"{name:{width}s}  {lines:5d}  {med:9.3f}  {best:7.3f}  {per_line:7.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
