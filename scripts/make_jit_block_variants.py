"""Build block-size variants of a captured library of hand-written Triton kernels from its vendored source
(#28 on a stranger's code), on any machine with Triton (no GPU: the target is the capture's).

    python scripts/make_jit_block_variants.py data/library/attorch --source third_party/attorch/attorch \
        --package attorch

For every distinct stock PTX of the capture: the kernel's `@triton.jit` function is found by its entry name
in the source folder, its launch rebuilt (chronos.triton.jit_source) until Triton remakes the committed stock
PTX exactly, then every BLOCK* constexpr moved one power of two up and down, each compiled, with the grid of
every launch of that PTX derived from ceil(n / block). Writes DIR/blocks.json (the schema of
scripts/make_block_variants.py's, which stage knob_blocks reads) and DIR/blocks/<stem>/<label>.ptx.gz.
The TRITON_PTXAS_PATH of the capture decides the PTX ISA version: attorch was captured with Triton's own
ptxas, which the Triton wheel brings.
"""

from __future__ import annotations

import argparse
import datetime
import gzip
import json
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from chronos.kernels.spec import read_ptx_file
from chronos.triton.jit_source import block_dims, block_moves, compile_jit, grid_after, load_jit, remake_stock
from chronos.triton.tuned_db import ptx_identity_sha256


def defining_file(source: Path, entry: str) -> Path | None:
    for path in sorted(source.glob("*.py")):
        if re.search(rf"^def {entry}\s*\(", path.read_text(), re.MULTILINE):
            return path
    return None


def constexprs_of(spec: dict) -> dict:
    m = re.search(r"constexprs (\{.*\})\s*$", spec.get("notes", ""))
    return json.loads(m.group(1)) if m else {}


def gz(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(gzip.compress(text.encode(), 9, mtime=0))


def kernel_entry(capture: Path, source: Path, package: str, stock_file: str, specs: list[dict],
                 identity: dict, limit: int = 256) -> dict:
    """One stock PTX: its stock launch remade, then each block move with a grid per launch."""
    first = specs[0]
    path = defining_file(source, first["entry"])
    if path is None:
        return {"error": f"no file of {source} defines {first['entry']}"}
    fn = load_jit(path, first["entry"], package)
    opts = {k: v for k, v in identity.get("launch_options", {}).items()
            if k in ("num_warps", "num_stages", "num_ctas", "maxnreg")}
    ident = ptx_identity_sha256(read_ptx_file(capture / stock_file))
    stock = remake_stock(fn, first, constexprs_of(first), opts, ident, limit)
    stem = Path(stock_file).name.split(".")[0]
    if stock is None:
        return {"stem": stem, "error": "no rebuilt launch remade the stock PTX", "source": str(path)}
    sig, consts, attrs = stock
    out = {"stem": stem, "remade_stock": True, "source": str(path.resolve().relative_to(ROOT)),
           "stock_config": {"kwargs": constexprs_of(first), **opts}, "variants": []}
    dims = {s["kernel"]: block_dims(sig, s, constexprs_of(first)) for s in specs}  # each launch's extents
    for move in block_moves(constexprs_of(first), opts.get("num_warps", 4)):
        v = {"label": move["label"], "kwargs": {move["block"]: move["new"]}, "num_warps": move["num_warps"]}
        grids = {s["kernel"]: g for s in specs
                 if (g := grid_after(s, move["block"], move["old"], move["new"], dims[s["kernel"]]))}
        if not grids:
            out["variants"].append({**v, "error": "no grid dimension is ceil(n / block) for this block"})
            continue
        try:
            ptx, warps, shared = compile_jit(fn, sig, {**consts, move["block"]: move["new"]}, attrs,
                                             {**opts, "num_warps": move["num_warps"]})
        except Exception as e:  # noqa: BLE001 - a move Triton cannot compile is a result, said as it is
            out["variants"].append({**v, "error": f"{type(e).__name__}: {' '.join(str(e).split())[:300]}"})
            continue
        rel = f"blocks/{stem}/{move['label'].replace(',', '+')}.ptx.gz"
        gz(capture / rel, ptx)
        out["variants"].append({**v, "ptx": rel, "num_warps": warps, "shared": shared, "grids": grids})
    return out


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("capture", type=Path)
    p.add_argument("--source", type=Path, required=True, help="the folder of the library's kernel modules")
    p.add_argument("--package", help="the package the modules belong to (their relative imports)")
    p.add_argument("--launch-limit", type=int, default=256,
                   help="launches tried per kernel to remake its stock PTX (a kernel with many unit strides "
                        "specialised away, like attorch's linear, may need thousands)")
    args = p.parse_args()
    import triton

    specs = json.loads((args.capture / "specs.json").read_text())
    identity = json.loads((args.capture / "triton.json").read_text())
    by_ptx: dict[str, list[dict]] = {}
    for s in specs:
        by_ptx.setdefault(s["ptx"], []).append(s)
    entries = {}
    for stock_file, group in sorted(by_ptx.items()):
        try:
            entries[stock_file] = kernel_entry(args.capture, args.source, args.package, stock_file, group,
                                               identity.get(group[0]["kernel"], {}), args.launch_limit)
        except Exception as e:  # noqa: BLE001 - one kernel's failure is said, the rest go on
            entries[stock_file] = {"error": f"{type(e).__name__}: {' '.join(str(e).split())[:300]}"}
        e = entries[stock_file]
        made = sum(1 for v in e.get("variants", []) if "ptx" in v)
        said = "remade" if e.get("remade_stock") else e.get("error")
        print(f"{group[0]['entry']:40s} {said}: {made} variants", flush=True)
    prov = {"date": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"), "gpu": None,
            "triton": triton.__version__, "command": " ".join(sys.argv)}
    (args.capture / "blocks.json").write_text(json.dumps({"provenance": prov, "kernels": entries}, indent=1,
                                                         sort_keys=True) + "\n")
    remade = sum(1 for e in entries.values() if e.get("remade_stock"))
    made = sum(1 for e in entries.values() for v in e.get("variants", []) if "ptx" in v)
    print(f"{len(entries)} stock PTX, {remade} remade from source, {made} block variants")
    return 0


if __name__ == "__main__":
    sys.exit(main())
