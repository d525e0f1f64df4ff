"""Stage `kernels`: write the gemm_tile PTX corpus and its launch specs.

    python -m chronos.stages.kernels --params params.yaml --out data/kernels/gemm_tile

Reads ``kernels.gemm_tile.{m,n,k,target,ptx_version}`` (defaults: [2,4,6,8] each, sm_90, 8.0).
"""

from __future__ import annotations

import argparse
import itertools
from pathlib import Path

import yaml

from chronos.kernels.gemm_tile import gemm_tile_ptx, gemm_tile_spec, kernel_name
from chronos.kernels.spec import KernelSpec, write_specs

DEFAULTS = {"m": [2, 4, 6, 8], "n": [2, 4, 6, 8], "k": [2, 4, 6, 8], "target": "sm_90", "ptx_version": "8.0"}


def load_config(params_path: Path) -> dict:
    params = yaml.safe_load(params_path.read_text()) or {}
    cfg = ((params.get("kernels") or {}).get("gemm_tile")) or {}
    return {key: cfg.get(key, default) for key, default in DEFAULTS.items()}


def write_gemm_tiles(cfg: dict, out: Path) -> list[KernelSpec]:
    out.mkdir(parents=True, exist_ok=True)
    specs = []
    for m, n, k in itertools.product(cfg["m"], cfg["n"], cfg["k"]):
        ptx = gemm_tile_ptx(m, n, k, target=cfg["target"], version=str(cfg["ptx_version"]))
        (out / f"{kernel_name(m, n, k)}.ptx").write_text(ptx)
        specs.append(gemm_tile_spec(m, n, k, target=cfg["target"]))
    write_specs(out / "specs.json", specs)
    return specs


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--params", type=Path, default=Path("params.yaml"))
    ap.add_argument("--out", type=Path, default=Path("data/kernels/gemm_tile"))
    args = ap.parse_args(argv)
    specs = write_gemm_tiles(load_config(args.params), args.out)
    print(f"kernels: wrote {len(specs)} gemm_tile kernels to {args.out}")


if __name__ == "__main__":
    main()
