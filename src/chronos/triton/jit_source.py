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
    if j < len(kept) and (kept[j]["kind"] == "buffer") == bool(POINTER_NAME.search(name)):
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
                table, v = (POINTER_TYPES, None) if a["kind"] == "buffer" else (SCALAR_TYPES, a.get("value"))
                sig[n] = table.get(a["dtype"])
                aligned = alignment.get(a["name"], 0) >= 16 if a["kind"] == "buffer" else (
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


def remake_stock(fn, spec: dict, constexprs: dict, options: dict, ident: str):
    """(signature, constexprs, attrs) whose compile is the stock PTX, or None."""
    for launch in launches_of(fn, spec["args"], constexprs, spec.get("alignment", {})):
        try:
            ptx = compile_jit(fn, *launch, options)[0]
        except Exception:  # noqa: BLE001, S112 - a guess Triton refuses is just not the launch
            continue
        if ptx_identity_sha256(ptx) == ident:
            return launch
    return None


def grid_after(spec: dict, block: str, old: int, new: int) -> list[int] | None:
    """The grid with `block` moved from old to new: each dimension that equals ceil(n / old) for one of the
    launch's integer arguments n becomes ceil(n / new); None when no dimension depends on it that way, or
    two arguments that fit disagree."""
    ints = [a["value"] for a in spec["args"] if a["kind"] == "scalar" and isinstance(a.get("value"), int)
            and not isinstance(a.get("value"), bool) and a["value"] > 0]
    grid, moved = list(spec["grid"]), False
    for d, g in enumerate(spec["grid"]):
        fits = {-(-n // new) for n in ints if -(-n // old) == g and n > old * (g - 1)}
        if len(fits) > 1:
            return None
        if fits and g > 1:
            grid[d], moved = fits.pop(), True
    return grid if moved else None


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
