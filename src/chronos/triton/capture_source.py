"""Where a recorded kernel comes from: the Python module that defines it and the ptxas Triton assembles it
with (chronos.triton.capture writes both into each launch record)."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path


def save_source(out: Path, fn) -> dict:
    """The Python module that defines a launched kernel (Inductor's generated module, or the user's file of a
    JIT function), copied once under `out/sources/` by content, with its function's identity: what a
    recompile with other block sizes or options starts from (#28)."""
    inner = getattr(fn, "fn", None)
    code = getattr(inner, "__code__", None)
    src = getattr(fn, "src", None)
    info = {"qualname": getattr(inner, "__qualname__", None),
            "module_name": getattr(inner, "__module__", None),
            "source_sha256": hashlib.sha256(src.encode()).hexdigest() if isinstance(src, str) else None,
            "module": None}
    path = Path(code.co_filename) if code is not None else None
    if path is None or not path.is_file():
        return info
    text = path.read_bytes()
    rel = f"sources/{hashlib.sha256(text).hexdigest()[:16]}{path.suffix}"
    dest = Path(out) / rel
    if not dest.exists():
        dest.parent.mkdir(parents=True, exist_ok=True)
        tmp = dest.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_bytes(text)
        os.replace(tmp, dest)
    return {**info, "module": rel}


def triton_ptxas() -> dict | None:
    """The ptxas Triton assembles with in this process now: {"path", "version"}. Not always Triton's own:
    Inductor points TRITON_PTXAS_PATH at torch's bundled ptxas before it compiles (torch/bin/ptxas in
    CUDA builds), and that ptxas also decides the PTX ISA version Triton emits."""
    try:
        import torch
        from triton.backends.nvidia.compiler import get_ptxas

        major, minor = torch.cuda.get_device_capability() if torch.cuda.is_available() else (9, 0)
        path = get_ptxas(10 * major + minor).path
    except Exception:  # noqa: BLE001 - no Triton NVIDIA backend here: nothing to record
        return None
    from chronos.toolchain import ptxas_version  # cached per path

    return {"path": path, "version": ptxas_version(path)}
