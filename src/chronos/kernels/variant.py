"""A variant's identity: the kernel, its (transformed) PTX text and the actions that produced it.

Neutral ground between the measurement layer (which measures variants) and the search (which makes them),
so that neither has to import the other for it.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field

from chronos.kernels.spec import KernelSpec


def sha256_text(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


@dataclass(frozen=True)
class Variant:
    """One candidate: the kernel's spec, the (transformed) PTX text and the actions that produced it.

    Identity is the sha256 of the PTX text: two action sequences that produce the same PTX are the same
    variant. The baseline is the variant with no actions.
    """

    spec: KernelSpec
    ptx: str
    actions: tuple[str, ...] = field(default=())
    recipe: tuple[str, str] | None = None
    """(specs.json path, entry): realise `actions` (canonical order) in the compile process instead of
    shipping `ptx` (left empty); used by the atlas, whose parent process would otherwise do it serially.
    The backend measuring it must be given the function that realises it (GpuBackend's `realize`)."""

    @property
    def ptx_sha256(self) -> str:
        return sha256_text(self.ptx)

    @property
    def kernel(self) -> str:
        return self.spec.kernel
