"""SASS identity: which cubins are one variant on the GPU, and ptxas-assembling PTX into that key.

Cubins often differ in metadata only (a `.maxnreg` that ptxas did not need to honour, symbol order) where
their machine code does not; the measurement measures one cubin per SASS key and the atlas groups action
sets by it. Toolchain level: it needs ptxas and the ELF reader, nothing of measure or search.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

from chronos.errors import PtxasError
from chronos.toolchain import assemble, elf_sections


def sass_key(cubin: bytes, entries: dict) -> str:
    """sha256 over what decides how the kernel runs: the machine code (`.text.*`), the constant banks and
    shared-memory sections, and ptxas's resource report (registers, stack frame, spills, shared) per entry.
    Symbol tables, `.nv.info` attributes (e.g. a `.maxnreg` hint that changed nothing) and notes are left
    out."""
    h = hashlib.sha256()
    for name, body in sorted(elf_sections(cubin).items()):
        if name.startswith((".text.", ".nv.constant", ".nv.shared")):
            h.update(name.encode() + b"\0" + len(body).to_bytes(8, "little") + body)
    for name, res in sorted(entries.items()):
        h.update(repr((name, res)).encode())
    return h.hexdigest()


@dataclass(frozen=True)
class Assembled:
    ptx_sha256: str
    sass_key: str = ""
    registers: int = 0
    spills: int = 0
    refused: str = ""  # ptxas's first error line when it refused the PTX


def assemble_key(ptx: str, arch: str, ptxas: str | None = None) -> Assembled:
    """ptxas one set's PTX and key it; a refusal is a result, not an exception (it is part of the atlas)."""
    sha = hashlib.sha256(ptx.encode()).hexdigest()  # kernels.variant.sha256_text, a layer above
    try:
        res = assemble(ptx, arch, ptxas=ptxas, name="atlas")
    except PtxasError as e:
        return Assembled(sha, refused=str(e).splitlines()[0][:300])
    regs = max((e.registers for e in res.entries.values()), default=0)
    spills = sum(e.spill_stores + e.spill_loads for e in res.entries.values())
    return Assembled(sha, sass_key(res.cubin, res.entries), regs, spills)
