"""Run every gemm_tile kernel on a GPU (driver JIT via CuPy) and check it against NumPy.

    python3 scripts/check_gemm_tile_gpu.py      # needs cupy and a CUDA GPU; exit 1 on any mismatch

Launches with count = threads - 5 on the full grid so the `t < count` guard is exercised: the
last five tiles of C must keep their NaN sentinel. sm_89 PTX also runs on sm_90 (PTX JIT is
forward-compatible), so both targets are checked on one H200.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

import cupy as cp
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))
from chronos.kernels.gemm_tile import GEMM_TILE_SHAPES, gemm_tile_ptx, gemm_tile_spec


def check(m: int, n: int, k: int, target: str, tmp: Path) -> float:
    spec = gemm_tile_spec(m, n, k)
    threads, skip = spec["threads"], 5
    path = tmp / f"{spec['entry']}.{target}.ptx"
    path.write_text(gemm_tile_ptx(m, n, k, target=target))
    fn = cp.RawModule(path=str(path)).get_function(spec["entry"])
    rng = np.random.default_rng(m * 100 + n * 10 + k)
    a = rng.uniform(-1, 1, (threads, m, k)).astype(np.float32)
    b = rng.uniform(-1, 1, (k, n)).astype(np.float32)
    c = cp.full((threads, m, n), np.nan, dtype=cp.float32)
    fn(
        tuple(spec["grid"]),
        tuple(spec["block"]),
        (cp.asarray(a), cp.asarray(b), c, np.uint32(threads - skip)),
    )
    out = cp.asnumpy(c)
    if not np.isnan(out[-skip:]).all():
        raise AssertionError("guard: tiles past count were written")
    ref = np.einsum("tik,kj->tij", a.astype(np.float64), b.astype(np.float64))
    return float(np.abs(out[:-skip] - ref[:-skip]).max())


def main() -> int:
    bad = []
    with tempfile.TemporaryDirectory() as d:
        for target in ("sm_90", "sm_89"):
            worst = 0.0
            for shape in GEMM_TILE_SHAPES:
                try:
                    err = check(*shape, target, Path(d))
                except Exception as exc:  # noqa: BLE001 -- report every kernel, not only the first
                    bad.append((target, shape, repr(exc)))
                    continue
                worst = max(worst, err)
                if err > 1e-5:
                    bad.append((target, shape, f"max abs err {err:.3g}"))
            print(f"{target}: {len(GEMM_TILE_SHAPES)} kernels, worst max abs err vs float64 {worst:.3g}")
    print("failures:", bad or "none")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
