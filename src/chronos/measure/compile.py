"""Compile one variant for measurement: ptxas its PTX (realised from a recipe in the compile process when the
search sends one) and, for cycle counts, its %clock64-instrumented twin. Used by the measurement backends
and the side-by-side comparisons alike, in their compile processes (so module-level, picklable)."""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass

from chronos.errors import MeasureError
from chronos.kernels.spec import KernelSpec
from chronos.kernels.variant import sha256_text

Realize = Callable[[tuple[str, str], tuple[str, ...]], "str | None"]
"""(recipe, actions) -> the PTX of that action set, None if it is not legal (see Variant.recipe). A
module-level function (the search's space.realize_recipe): it is pickled to the compile processes."""


@dataclass
class Compiled:
    cubin: bytes
    sha: str
    registers: int
    spills: int
    cycles: tuple[str, bytes] | None
    note: str = ""
    ptx_sha: str = ""
    sass: str = ""  # chronos.sass.sass_key: equal for cubins that differ only in metadata


def compile_variant(ptx: str, spec: KernelSpec, arch: str, ptxas: str | None, with_cycles: bool = True,
                    recipe: tuple | None = None, realize: Realize | None = None) -> Compiled:
    """ptxas the PTX (raises PtxasError) and, for cycles, its %clock64-instrumented twin. With `recipe`
    ((specs.json, entry), actions), the PTX is realised here first, by `realize`."""
    from chronos.measure.instrument import instrument_text
    from chronos.sass import sass_key
    from chronos.toolchain import assemble

    if recipe is not None:
        if realize is None:
            raise MeasureError(f"{recipe[0][1]}: a recipe variant needs a realize function (none was given)")
        ptx = realize(*recipe)
        if ptx is None:
            raise MeasureError(f"{recipe[0][1]} [{'+'.join(recipe[1])}]: not a legal set")
    res = assemble(ptx, arch, ptxas=ptxas, name="variant")
    e = res.entries.get(spec.entry)
    regs = e.registers if e else 0
    spills = (e.spill_stores + e.spill_loads) if e else 0
    cycles, note = None, ""
    if with_cycles:
        try:
            inst = assemble(instrument_text(ptx, spec.entry), arch, ptxas=ptxas, name="cycles")
            cycles = (hashlib.sha256(inst.cubin).hexdigest(), inst.cubin)
        except Exception as ex:  # noqa: BLE001 - no cycles for this variant, said in its log
            note = f"no cycle instrumentation: {ex}"
    return Compiled(res.cubin, hashlib.sha256(res.cubin).hexdigest(), regs, spills, cycles, note,
                    sha256_text(ptx), sass_key(res.cubin, res.entries))
