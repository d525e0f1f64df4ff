"""A variant's identity: the kernel, its (transformed) PTX text and the actions that produced it.

Neutral ground between the measurement layer (which measures variants) and the search (which makes them),
so that neither has to import the other for it.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field, replace
from pathlib import Path

from chronos.kernels.spec import KernelSpec, read_ptx_file


def sha256_text(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


@dataclass(frozen=True)
class Launch:
    """A variant's own launch geometry, where it differs from its spec's: a Triton recompile with another
    num_warps runs other threads per block and may need other shared memory, one with another block size
    (XBLOCK, R0_BLOCK...) another grid (#28, action space v3)."""

    block: tuple[int, int, int]
    shared_bytes: int
    grid: tuple[int, int, int] | None = None
    """None: the spec's grid."""

    def to_json(self) -> dict:
        d = {"block": list(self.block), "shared": self.shared_bytes}
        return d if self.grid is None else {**d, "grid": list(self.grid)}

    @staticmethod
    def from_json(d: dict) -> Launch:
        grid = tuple(int(g) for g in d["grid"]) if d.get("grid") else None
        return Launch(tuple(int(b) for b in d["block"]), int(d["shared"]), grid)


def launched_as(spec: KernelSpec, launch: Launch | None) -> KernelSpec:
    """The spec a variant is launched with: its own geometry over the spec's."""
    if launch is None:
        return spec
    grid = spec.grid if launch.grid is None else launch.grid
    return replace(spec, block=launch.block, shared_bytes=launch.shared_bytes, grid=grid)


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
    launch: Launch | None = None
    """Its own launch geometry (None: the spec's). Part of its identity in a comparison's key."""

    @property
    def ptx_sha256(self) -> str:
        return sha256_text(self.ptx)

    @property
    def key(self) -> str:
        """What a comparison's store key holds for it: the PTX hash, with its own geometry if it has one."""
        if self.launch is None:
            return self.ptx_sha256
        g = self.launch
        key = f"{self.ptx_sha256}@{'x'.join(map(str, g.block))}+{g.shared_bytes}"
        return key if g.grid is None else f"{key}/{'x'.join(map(str, g.grid))}"

    @property
    def kernel(self) -> str:
        return self.spec.kernel


def recorded_variant(folder: Path, spec: KernelSpec, record: dict,
                     actions: tuple[str, ...]) -> Variant | dict:
    """A config compiled on the GPU image and recorded in a manifest beside the captured workload (blocks,
    anchors and walk manifests: its PTX file under `folder`, num_warps, shared memory, a grid per launch)
    as the Variant that launches for `spec`; else why there is none, as a report row: same_as_stock,
    compile_error (with its log), no_grid (no grid checked for this launch)."""
    grid = (record.get("grids") or {}).get(spec.kernel)
    if "ptx" in record and grid is not None:
        launch = Launch((32 * record["num_warps"], 1, 1), record["shared"], tuple(grid))
        return Variant(spec, read_ptx_file(folder / record["ptx"]), actions, launch=launch)
    if record.get("same_as_stock"):
        return {"valid": False, "reason": "same_as_stock"}
    if "error" in record:
        return {"valid": False, "reason": "compile_error", "log": record["error"]}
    return {"valid": False, "reason": "no_grid"}
