"""Triton's own compile knobs on a captured kernel (#28, action space v3): the kernel recompiled from its
Triton IR with `num_warps`, `num_stages` or `maxnreg` changed, everything else as Triton compiled it.

The source is the kernel's TTIR from the capture's Triton cache: Triton lowers a `@triton.jit` function or an
Inductor module to TTIR before any of these knobs enter (they act from TTGIR on: layouts over the warps,
software pipelining, the register cap), so recompiling that TTIR with the stock options remakes the stock
PTX, and with one option changed gives exactly that knob's variant. scripts/make_knob_variants.py checks
the first for every kernel before any variant of it is kept. Block sizes (XBLOCK, R0_BLOCK, ...) are
constexprs folded into the TTIR: they need the Python source and are not reachable here.

Needs Triton (a GPU is not needed: the target is given); Chronos's CPU pipeline reads the committed results.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

KNOB_VALUES: dict[str, tuple[int, ...]] = {
    "num_warps": (1, 2, 4, 8, 16, 32),
    "num_stages": (1, 2, 3, 4, 5),
    "maxnreg": (64, 128, 168, 255),
}
"""Every value of each knob a census tries beside stock (maxnreg's stock is no cap)."""

MAX_THREADS = 1024


def knob_label(knob: str, value: int) -> str:
    """The action name a knob value takes in a comparison ("num_warps=8")."""
    return f"{knob}={value}"


def single_knobs(stock: dict) -> list[tuple[str, int]]:
    """Every (knob, value) beside the kernel's stock options that a launch allows (num_warps x 32 threads
    within a block's 1024)."""
    out = []
    for knob, values in KNOB_VALUES.items():
        for v in values:
            if v == stock.get(knob) or (knob == "num_warps" and 32 * v > MAX_THREADS):
                continue
            out.append((knob, v))
    return out


@dataclass(frozen=True)
class Build:
    ptx: str
    num_warps: int
    shared: int
    """Dynamic shared memory per block, from Triton's metadata (the launch needs it)."""


def _frozen(value):
    """JSON lists back to the tuples Triton's options hold (they are hashed)."""
    if isinstance(value, list):
        return tuple(_frozen(v) for v in value)
    return value


def stock_options(meta: dict) -> dict:
    """The compile options Triton recorded in the kernel's cache metadata, as `triton.compile` takes them."""
    from triton.backends.nvidia.compiler import CUDAOptions

    fields = CUDAOptions.__dataclass_fields__
    # extern_libs holds the capturing machine's path to libdevice: Triton finds its own
    return {k: _frozen(v) for k, v in meta.items() if k in fields and v is not None and k != "extern_libs"}


def ptx_version_of(ptx: str) -> int:
    """The PTX ISA version a module declares, as Triton's `ptx_version` takes it (`.version 9.0`: 90)."""
    m = re.search(r"^\s*\.version\s+(\d+)\.(\d+)", ptx, re.MULTILINE)
    if m is None:
        raise ValueError("no .version directive in the PTX")
    return 10 * int(m.group(1)) + int(m.group(2))


def recompile(ttir: Path, meta: dict, overrides: dict | None = None, ptx_version: int | None = None) -> Build:
    """`ttir` compiled for the target recorded in `meta` with its stock options and `overrides` (raises
    Triton's own error when the knob value cannot be compiled). `ptx_version` pins the PTX ISA version
    (else Triton takes it from whichever ptxas it finds: pass the stock PTX's to remake it anywhere)."""
    import triton
    from triton.backends.compiler import GPUTarget

    target = meta["target"]
    gpu = GPUTarget(target["backend"], target["arch"], target["warp_size"])
    options = {**stock_options(meta), **(overrides or {})}
    if ptx_version is not None:
        options["ptx_version"] = ptx_version
    kernel = triton.compile(str(ttir), target=gpu, options=options)
    md = kernel.metadata
    return Build(kernel.asm["ptx"], int(md.num_warps), int(md.shared))
