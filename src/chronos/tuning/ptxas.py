"""The ptxas that Triton assembles a captured corpus with at deployment, so that the measured cubins are the
ones that will run."""

from __future__ import annotations

import os
import re
from pathlib import Path

from chronos.errors import ChronosError
from chronos.tuning.parts import triton_identity


def deploy_ptxas(dir_: Path) -> str:
    """The ptxas Triton will assemble DIR's kernels with. Not always Triton's own: Inductor points
    TRITON_PTXAS_PATH at torch's bundled ptxas before compiling (torch 2.11+cu130 on the H200: 13.0, PTX ISA
    9.0, where Triton 3.6's own is 12.8 and rejects that PTX). Triton picks the PTX ISA from its ptxas's CUDA
    version, so the corpus's `.version` names the ptxas: the one capture recorded, else the first of
    TRITON_PTXAS_PATH, torch's bundled ptxas and Triton's own whose ISA matches."""
    try:
        from triton.backends.nvidia.compiler import get_ptxas, ptx_get_version
    except ImportError as e:
        raise ChronosError(f"--ptxas triton: Triton is not importable ({e})") from e
    from chronos.kernels.spec import read_ptx_file
    from chronos.toolchain import ptxas_version

    identity = triton_identity(dir_) or {}
    recorded = sorted({i["ptxas"]["path"] for i in identity.values() if i.get("ptxas")})
    want = sorted({ptx_isa(read_ptx_file(dir_ / i["stock_ptx"])) for i in identity.values()} - {None})
    candidates = [*recorded, os.environ.get("TRITON_PTXAS_PATH"), torch_ptxas(), get_ptxas(90).path]
    tried = []
    for path in dict.fromkeys(c for c in candidates if c and Path(c).is_file()):
        version = ptxas_version(path)
        isa = ptx_get_version(".".join(version.split(".")[:2]))
        if not want or isa == want[-1]:
            return path
        tried.append(f"{path} ({version}: ISA {isa / 10:.1f})")
    raise ChronosError(f"{dir_}: its PTX is ISA {want[-1] / 10:.1f} and no ptxas here emits it "
                       f"(tried {', '.join(tried) or 'none'}); set TRITON_PTXAS_PATH to the ptxas the "
                       "workload's Triton used, or pass --ptxas PATH")


def recorded_ptxas(dir_: Path) -> dict | None:
    """The ptxas ({path, version}) DIR's capture recorded Triton assembling its kernels with, where it
    recorded one (older captures did not): a measurement of these kernels is what deploys only if its
    cubins came from this version."""
    found = sorted({(i["ptxas"]["path"], i["ptxas"]["version"])
                    for i in (triton_identity(dir_) or {}).values() if i.get("ptxas")})
    versions = sorted({v for _, v in found})
    if len(versions) > 1:
        raise ChronosError(f"{dir_}: its capture recorded several ptxas versions ({', '.join(versions)})")
    return {"path": found[0][0], "version": versions[0]} if found else None


def ptxas_mismatch(deployed: dict | None, provenance: dict | None) -> str | None:
    """Why a measurement (its provenance) does not stand for a kernel that deploys with `deployed`
    (recorded_ptxas: another ptxas made the cubins it timed), or None."""
    got = (provenance or {}).get("ptxas")
    if deployed and got and got != deployed["version"]:
        return f"measured with ptxas {got}; its capture's Triton assembles it with {deployed['version']}"
    return None


def ptx_isa(ptx: str) -> int | None:
    m = re.search(r"^\s*\.version\s+(\d+)\.(\d+)", ptx, re.MULTILINE)
    return 10 * int(m.group(1)) + int(m.group(2)) if m else None


def torch_ptxas() -> str | None:
    """torch's bundled ptxas (CUDA builds), the one Inductor hands to Triton."""
    try:
        import torch
    except ImportError:
        return None
    path = Path(torch.__file__).parent / "bin" / "ptxas"
    return str(path) if path.is_file() else None
