"""A hand-written Triton kernel recompiled from its Python source with other block sizes (#28, action space v3
on a stranger's code): the `@triton.jit` function is imported from its file (no GPU: device queries made
while the module loads answer the capture's target), the launch's signature, specialisation and constexprs
are rebuilt from the captured spec until the compile remakes the captured stock PTX (by identity) — only
then is anything else compiled. Each BLOCK_SIZE* constexpr is then moved one power of two up or down (with
num_warps kept or moved alike), and the grid follows where the captured grid is ceil(n / block) for one
of the launch's integer arguments n; a move whose grid cannot be derived that way is left out, with why.

A move may still be wrong for a kernel whose block must cover a whole row: bit-exact verification on the
GPU decides, as for every variant.
"""

from __future__ import annotations

import contextlib
import importlib.util
import itertools
import math
import re
import sys
import types
from pathlib import Path

from chronos.triton.tuned_db import ptx_identity_sha256

SCALAR_TYPES = {"i32": "i32", "i64": "i64", "u32": "u32", "u64": "u64", "f32": "fp32", "f64": "fp64",
                "f16": "fp16", "bf16": "bf16", "i1": "i1"}
POINTER_TYPES = {d: "*" + SCALAR_TYPES.get(d, d)
                 for d in ("f32", "f16", "bf16", "f64", "i32", "i64", "i8", "u8", "i16", "u32", "u64", "i1")}
BLOCK = re.compile(r"BLOCK_SIZE\w*|BLOCK_[A-Z]\w*")
MAX_BLOCK, MAX_WARPS = 8192, 32


@contextlib.contextmanager
def cpu_import(capability: tuple[int, int]):
    """While a kernel module loads on a machine without a GPU, torch answers device queries with the
    capture's target (autotune configs are often built from the capability at import)."""
    import torch

    saved = torch.cuda.get_device_capability, torch.cuda.is_available
    torch.cuda.get_device_capability = lambda *a, **k: capability
    try:
        yield
    finally:
        torch.cuda.get_device_capability, torch.cuda.is_available = saved


def load_jit(path: Path, qualname: str, package: str | None = None, capability=(9, 0)):
    """The JITFunction `qualname` of the file `path` (under a stub package `package`, so that its relative
    imports resolve without running the package's __init__); through autotune/heuristics wrappers."""
    path = Path(path).resolve()
    name = f"{package}.{path.stem}" if package else f"chronos_jit_{path.stem}"
    if package and package not in sys.modules:
        stub = types.ModuleType(package)
        stub.__path__ = [str(path.parent)]
        sys.modules[package] = stub
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, path)
        mod = importlib.util.module_from_spec(spec)
        sys.modules[name] = mod
        with cpu_import(capability):
            spec.loader.exec_module(mod)
    from triton.runtime.jit import JITFunction

    fn = sys.modules[name]
    for part in qualname.split("."):
        fn = getattr(fn, part)
    while not isinstance(fn, JITFunction) and hasattr(fn, "fn"):  # Autotuner / Heuristics -> JITFunction
        fn = fn.fn
    return fn


def _constexpr_names(fn) -> set[str]:
    return {p.name for p in fn.params if p.is_constexpr}


POINTER_NAME = re.compile(r"(ptr|pointer)s?$|^ptr", re.IGNORECASE)


def _gone_values(name: str) -> tuple:
    """What a runtime argument missing from the PTX was specialised to: a pointer None, a stride 1 (the
    unit stride Triton specialises), anything else either."""
    if POINTER_NAME.search(name):
        return (None,)
    return (1,) if "stride" in name.lower() else (None, 1)


def _is_pointer(param: dict) -> bool:
    """A buffer, or an alias into one (attorch's linear passes its input again as the absent bias)."""
    return param["kind"] in ("buffer", "alias")


def _alignments(runtime: list[str], kept: list[dict], i: int = 0, j: int = 0):
    """Each way the runtime arguments map onto the kept PTX parameters in order: (name, param or None),
    a pointer-named argument only onto a buffer, any other only onto a scalar."""
    if i == len(runtime):
        if j == len(kept):
            yield []
        return
    name = runtime[i]
    if len(runtime) - i > len(kept) - j:  # it may be one that was specialised away
        for rest in _alignments(runtime, kept, i + 1, j):
            yield [(name, None), *rest]
    if j < len(kept) and _is_pointer(kept[j]) == bool(POINTER_NAME.search(name)):
        for rest in _alignments(runtime, kept, i + 1, j + 1):
            yield [(name, kept[j]), *rest]


def launches_of(fn, args: list[dict], constexprs: dict, alignment: dict, limit: int = 256):
    """(signature, constexprs, attrs) that could have produced the captured PTX parameters, at most `limit`:
    the runtime arguments Triton kept are the spec's params in order; the others it specialised away
    (a pointer to None, a stride to 1; chronos.triton.jit_source._gone_values)."""
    declared = _constexpr_names(fn)
    runtime = [n for n in fn.arg_names if n not in declared]
    kept = [a for a in args if a["kind"] != "null"]
    count = 0
    # the likeliest first: arguments Triton specialises away are mostly unit strides and None pointers
    mappings = list(itertools.islice(_alignments(runtime, kept), 20000))
    mappings.sort(key=lambda m: sum(1 for n, a in m if a is None and len(_gone_values(n)) > 1))
    for mapping in mappings:
        gone = [n for n, a in mapping if a is None]
        for values in itertools.product(*(_gone_values(n) for n in gone)):
            sig, attrs, consts = {}, {}, {**constexprs, **dict(zip(gone, values, strict=True))}
            for n, a in mapping:
                if a is None:
                    continue
                table, v = (POINTER_TYPES, None) if _is_pointer(a) else (SCALAR_TYPES, a.get("value"))
                sig[n] = table.get(a["dtype"])
                aligned = alignment.get(a["name"], 0) >= 16 if _is_pointer(a) else (
                    isinstance(v, int) and not isinstance(v, bool) and v % 16 == 0)
                if aligned:
                    attrs[(fn.arg_names.index(n),)] = [["tt.divisibility", 16]]
            if None in sig.values():
                continue
            yield {n: sig.get(n, "constexpr") for n in fn.arg_names}, consts, attrs
            count += 1
            if count >= limit:
                return


def compile_jit(fn, signature: dict, constexprs: dict, attrs: dict, options: dict, arch: int = 90):
    import triton
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    k = triton.compile(ASTSource(fn, signature, constexprs, attrs), target=GPUTarget("cuda", arch, 32),
                       options=options)
    return k.asm["ptx"], int(k.metadata.num_warps), int(k.metadata.shared)


def remake_stock(fn, spec: dict, constexprs: dict, options: dict, ident: str, limit: int = 256):
    """(signature, constexprs, attrs) whose compile is the stock PTX, or None (at most `limit` launches
    tried: about a second of compile each)."""
    for launch in launches_of(fn, spec["args"], constexprs, spec.get("alignment", {}), limit):
        try:
            ptx = compile_jit(fn, *launch, options)[0]
        except Exception:  # noqa: BLE001, S112 - a guess Triton refuses is just not the launch
            continue
        if ptx_identity_sha256(ptx) == ident:
            return launch
    return None


def _cdiv(n: int, b: int) -> int:
    return -(-n // b)


def grid_after(spec: dict, block: str, old: int, new: int, dims: dict | None = None) -> list[int] | None:
    """The grid with `block` moved from old to new. With `dims` (each block constexpr's extent: the launch
    argument its name names, chronos.triton.jit_source.block_dims), a dimension that is the product of
    ceil(extent / block) over one or two blocks — a matmul's 1D grid over rows and columns, attorch's
    linear — takes the new block's term; one that such a product explains without the moved block (a
    reduction's block) stays. Otherwise (no dims, or a grid they explain in no way or two), a dimension
    equal to ceil(n / old) for one integer argument n becomes ceil(n / new). None when no dimension
    follows the block, or the arguments that fit disagree."""
    if dims and block in dims and (grid := _grid_by_extent(spec["grid"], block, new, dims)) is not None:
        return grid
    ints = [a["value"] for a in spec["args"] if a["kind"] == "scalar" and isinstance(a.get("value"), int)
            and not isinstance(a.get("value"), bool) and a["value"] > 0]
    grid, moved = list(spec["grid"]), False
    for d, g in enumerate(spec["grid"]):
        fits = {_cdiv(n, new) for n in ints if _cdiv(n, old) == g and n > old * (g - 1)}
        if len(fits) > 1:
            return None
        if fits and g > 1:
            grid[d], moved = fits.pop(), True
    return grid if moved else None


def _grid_by_extent(grid: list[int], block: str, new: int, dims: dict) -> list[int] | None:
    """grid_after by named extents: dims is block -> (extent, its stock value)."""
    terms = [b for b in dims if _cdiv(*dims[b]) > 1]  # a block whose term is 1 explains nothing
    subsets = [(a,) for a in terms] + [(a, b) for a in terms for b in terms if a < b]
    out, explained = list(grid), 0
    for d, g in enumerate(grid):
        if g <= 1:
            continue
        fits = [sub for sub in subsets if math.prod(_cdiv(*dims[b]) for b in sub) == g]
        if len(fits) != 1:
            return None  # unexplained, or explained two ways
        explained += 1
        out[d] = math.prod(_cdiv(dims[b][0], new if b == block else dims[b][1]) for b in fits[0])
    return out if explained else None


def block_dims(signature: dict, spec: dict, constexprs: dict) -> dict:
    """block constexpr -> (its extent, its value): the runtime integer argument named after the block
    (BLOCK_SIZE_OUT_FEAT -> out_feat_dim, BLOCK_SIZE_N -> n), where exactly one is; read from the remade
    launch's signature, whose kept scalars are the spec's scalars in order."""
    names = [n for n, t in signature.items() if t != "constexpr" and not t.startswith("*")]
    values = [a.get("value") for a in spec["args"] if a["kind"] == "scalar"]
    if len(names) != len(values):
        return {}
    ints = {n: v for n, v in zip(names, values, strict=True)
            if isinstance(v, int) and not isinstance(v, bool) and v > 0}
    out = {}
    for key, v in constexprs.items():
        if not BLOCK.fullmatch(key) or not isinstance(v, int) or isinstance(v, bool):
            continue
        stem = re.sub(r"^BLOCK_(SIZE_)?", "", key).lower()
        named = [n for n in ints if n.lower() in (stem, f"{stem}_dim", f"{stem}_size", f"n_{stem}")]
        if len(named) == 1:
            out[key] = (ints[named[0]], v)
    return out


def block_moves(constexprs: dict, num_warps: int) -> list[dict]:
    """Each BLOCK* constexpr one power of two up and down, num_warps kept or moved by the same factor."""
    out = []
    for key, v in constexprs.items():
        if not BLOCK.fullmatch(key) or not isinstance(v, int) or isinstance(v, bool) or v < 1:
            continue
        for f in (2, 0.5):
            new = int(v * f)
            if new < 1 or new > MAX_BLOCK:
                continue
            for warps in sorted({num_warps, int(num_warps * f)}):
                if 1 <= warps <= MAX_WARPS:
                    label = f"{key}={new}" if warps == num_warps else f"{key}={new},num_warps={warps}"
                    out.append({"label": label, "block": key, "old": v, "new": new, "num_warps": warps})
    return out
