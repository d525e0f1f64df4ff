"""Stage `kernels`: write the gemm_tile PTX corpus and its launch specs.

    python -m chronos.stages.kernels --params params.yaml --out data/kernels/gemm_tile

Reads ``kernels.gemm_tile.{m,n,k,target,ptx_version}``.
"""

from __future__ import annotations

import itertools
import sys
from pathlib import Path

from chronos.config import GemmTileConfig
from chronos.kernels.gemm_tile import gemm_tile_ptx, gemm_tile_spec, kernel_name
from chronos.kernels.spec import KernelSpec, write_specs
from chronos.stages.common import run_stage


def write_gemm_tiles(cfg: GemmTileConfig, out: Path) -> list[KernelSpec]:
    out.mkdir(parents=True, exist_ok=True)
    specs = []
    for m, n, k in itertools.product(cfg.m, cfg.n, cfg.k):
        ptx = gemm_tile_ptx(m, n, k, target=cfg.target, version=cfg.ptx_version)
        (out / f"{kernel_name(m, n, k)}.ptx").write_text(ptx)
        specs.append(gemm_tile_spec(m, n, k, target=cfg.target))
    write_specs(out / "specs.json", specs)
    return specs


def main(argv: list[str] | None = None) -> int:
    def arguments(ap):
        ap.add_argument("--out", type=Path, default=Path("data/kernels/gemm_tile"))

    def body(args, cfg):
        specs = write_gemm_tiles(cfg.kernels.gemm_tile, args.out)
        print(f"kernels: wrote {len(specs)} gemm_tile kernels to {args.out}")

    return run_stage("kernels", __doc__, arguments, body, argv)


if __name__ == "__main__":
    sys.exit(main())
