"""KernelSpec: the launch contract of a kernel — what a runner needs to launch, verify and time it.

A spec names the PTX file and entry, the launch geometry, and every entry parameter in order: buffers
(dtype, element count, role, how to initialise inputs) and scalars (a fixed value). An input may name `data`,
a .npy of contents captured from a real launch (chronos capture): draw 0 uses it, later draws its init.
`null` arguments are pointers the kernel never dereferences in this launch (Triton's two hidden scratch
pointers, an empty tensor) and are passed as 0. `alias` arguments point into another buffer argument of
the same launch (`alias_of`, at byte `offset`): a launch that passes one tensor to two parameters (a
library handing its input in as the absent bias) is reproduced as it ran, on one allocation.
`alignment` is the contract on pointer parameters (bytes), which the transforms may rely on (it is copied
into `Module.align_contract`); a runner must allocate so that it holds.

Specs serialise to plain JSON (`to_json` / `from_json`); a family's specs live in one `specs.json` beside
its PTX files.
"""

from __future__ import annotations

import json
import re
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path

from chronos.errors import SpecError

DTYPES = {"f32": 4, "f16": 2, "bf16": 2, "f64": 8, "i8": 1, "u8": 1, "i16": 2, "i32": 4, "u32": 4, "i64": 8,
          "u64": 8}
ROLES = ("input", "output", "inout", "null")
_UNSAFE_NAME = re.compile(r"[/\\\x00]|^\.{0,2}$")
_INIT = re.compile(r"^(uniform\(-?[\d.e+-]+,-?[\d.e+-]+\)|normal\(-?[\d.e+-]+,[\d.e+-]+\)"
                   r"|randint\(-?\d+,-?\d+\)|zeros|arange|poison)$")


@dataclass(frozen=True)
class ArgSpec:
    """One entry parameter, in PTX parameter order."""

    name: str
    kind: str  # "buffer" | "scalar" | "null" | "alias"
    dtype: str
    elements: int = 0  # buffers: element count
    role: str = "input"  # buffers: input | output | inout
    init: str = "uniform(-1,1)"  # buffers: how inputs are drawn (fresh per draw, seeded)
    value: float | int | None = None  # scalars
    data: str | None = None  # inputs: a .npy of captured contents (relative to specs.json), used as draw 0
    alias_of: str | None = None  # aliases: the buffer argument this pointer points into
    offset: int | None = None  # aliases: its byte offset from that buffer's start

    @property
    def nbytes(self) -> int:
        return self.elements * DTYPES[self.dtype]

    def validate(self, kernel: str) -> None:
        where = f"{kernel}: argument {self.name!r}"
        if self.kind not in ("buffer", "scalar", "null", "alias"):
            raise SpecError(f"{where}: kind must be buffer, scalar, null or alias, not {self.kind!r}")
        if self.dtype not in DTYPES:
            raise SpecError(f"{where}: unknown dtype {self.dtype!r}")
        if self.kind == "buffer":
            if self.elements <= 0 or self.role not in ("input", "output", "inout"):
                raise SpecError(f"{where}: a buffer needs elements > 0 and role input/output/inout")
            if not _INIT.match(self.init):
                raise SpecError(f"{where}: bad init {self.init!r}")
        if self.kind == "scalar" and self.value is None:
            raise SpecError(f"{where}: a scalar needs a value")
        if (self.kind == "alias") != (self.alias_of is not None):
            raise SpecError(f"{where}: an alias (and only an alias) names the buffer it points into")
        bad_offset = not isinstance(self.offset, int) or self.offset < 0
        if self.kind == "alias" and (self.elements <= 0 or bad_offset):
            raise SpecError(f"{where}: an alias needs elements > 0 and a byte offset >= 0")


@dataclass(frozen=True)
class KernelSpec:
    kernel: str  # display name: "gemm_tile(4,6,8)", "softmax_r4096_c1024"
    family: str  # "gemm_tile" | "triton"
    entry: str  # the .entry name in the PTX
    ptx: str  # PTX file, relative to the specs.json that lists this spec
    grid: tuple[int, int, int]
    block: tuple[int, int, int]
    args: tuple[ArgSpec, ...]
    shared_bytes: int = 0  # dynamic shared memory per block
    alignment: dict[str, int] = field(default_factory=dict)  # param name -> guaranteed byte alignment
    arch: str = "sm_90"
    notes: str = ""

    @property
    def outputs(self) -> list[ArgSpec]:
        return [a for a in self.args if a.kind == "buffer" and a.role in ("output", "inout")]

    @property
    def threads(self) -> int:
        g, b = self.grid, self.block
        return g[0] * g[1] * g[2] * b[0] * b[1] * b[2]

    def validate(self) -> KernelSpec:
        if _UNSAFE_NAME.search(self.kernel):  # it names files: tune parts, their PTX, search records
            raise SpecError(f"kernel name {self.kernel!r} cannot name a file (no '/', '\\', NUL, '.' or "
                            "'..'): rename it in its specs.json")
        if not self.args or not self.entry:
            raise SpecError(f"{self.kernel}: a spec needs an entry and its arguments")
        if len(self.grid) != 3 or len(self.block) != 3 or min(*self.grid, *self.block) < 1:
            raise SpecError(f"{self.kernel}: grid and block are three positive ints")
        for a in self.args:
            a.validate(self.kernel)
        if not self.outputs:
            raise SpecError(f"{self.kernel}: no output buffer to verify")
        names = [a.name for a in self.args]
        if len(set(names)) != len(names):
            raise SpecError(f"{self.kernel}: duplicate argument names")
        buffers = {a.name: a for a in self.args if a.kind == "buffer"}
        for a in self.args:
            if a.kind == "alias" and (a.alias_of not in buffers
                                      or a.offset + a.nbytes > buffers[a.alias_of].nbytes):
                raise SpecError(f"{self.kernel}: alias {a.name!r} must lie inside buffer argument "
                                f"{a.alias_of!r}")
        return self

    def to_json(self) -> dict:
        d = asdict(self)
        d["grid"], d["block"] = list(self.grid), list(self.block)
        d["args"] = [{k: v for k, v in asdict(a).items() if v is not None} for a in self.args]
        return d

    @classmethod
    def from_json(cls, d: dict) -> KernelSpec:
        try:
            args = tuple(ArgSpec(**a) for a in d["args"])
            spec = cls(kernel=d["kernel"], family=d["family"], entry=d["entry"], ptx=d["ptx"],
                       grid=tuple(d["grid"]), block=tuple(d["block"]), args=args,
                       shared_bytes=int(d.get("shared_bytes", 0)), alignment=dict(d.get("alignment", {})),
                       arch=d.get("arch", "sm_90"), notes=d.get("notes", ""))
        except (KeyError, TypeError, ValueError) as e:
            raise SpecError(f"malformed kernel spec {d.get('kernel', '?') if isinstance(d, dict) else d!r}: "
                            f"{e}") from e
        return spec.validate()


def write_specs(path: Path, specs: list[KernelSpec]) -> None:
    path.write_text(json.dumps([s.to_json() for s in specs], indent=1) + "\n")


def load_specs(path: Path) -> list[KernelSpec]:
    """The specs listed in a specs.json (PTX paths stay relative to its folder: see `ptx_path`; captured
    `data` files become absolute, so a worker process finds them)."""
    try:
        raw = json.loads(Path(path).read_text())
    except (OSError, json.JSONDecodeError) as e:
        raise SpecError(f"cannot read kernel specs {path}: {e}") from e
    return [_resolve_data(KernelSpec.from_json(d), Path(path).resolve().parent) for d in raw]


def _resolve_data(spec: KernelSpec, folder: Path) -> KernelSpec:
    if not any(a.data for a in spec.args):
        return spec
    args = tuple(replace(a, data=str(folder / a.data)) if a.data else a for a in spec.args)
    return replace(spec, args=args)


CYCLE_FAMILIES = ("gemm_tile",)
"""Families whose objective is the seed's %clock64 cycles (its per-thread tile kernels, its reproduction).
Every other kernel (Triton's, the LLM tier, anything a user brings) is judged in wall time only."""


def judged_in_cycles(spec: KernelSpec) -> bool:
    return spec.family in CYCLE_FAMILIES


def ptx_path(specs_json: Path, spec: KernelSpec) -> Path:
    return Path(specs_json).parent / spec.ptx


PTX_FILE_LIMIT = 64 << 20
"""Bytes: a PTX file larger than this is refused before it is read (the largest captured one is ~2 MB)."""


def read_ptx_file(path: Path) -> str:
    """A PTX file's text; `.ptx.gz` (a committed capture corpus, kept compact) is decompressed. A missing,
    special, oversized, corrupt or binary file is a SpecError naming it."""
    import gzip
    import zlib

    path = Path(path)
    where = f"PTX file {path.resolve()}"
    if not path.is_file():
        raise SpecError(f"{where} {'is not a regular file' if path.exists() else 'does not exist'}")
    if path.stat().st_size > PTX_FILE_LIMIT:
        raise SpecError(f"{where} is {path.stat().st_size} bytes, over the {PTX_FILE_LIMIT} byte limit")
    try:
        raw = path.read_bytes()
        text = (gzip.decompress(raw) if path.suffix == ".gz" else raw).decode()
    except (OSError, EOFError, zlib.error, UnicodeDecodeError) as e:
        raise SpecError(f"{where} is unreadable or not text: {e}") from None
    if len(text) > PTX_FILE_LIMIT or "\x00" in text:
        raise SpecError(f"{where} is not PTX text (NUL bytes, or over {PTX_FILE_LIMIT} bytes unpacked)")
    return text


def read_ptx(specs_json: Path, spec: KernelSpec) -> str:
    return read_ptx_file(ptx_path(specs_json, spec))


def load_module(specs_json: Path, spec: KernelSpec):
    """Parse the spec's PTX and attach its alignment contract, ready for chronos.transforms. A spec must
    give every parameter of its entry an argument: a launch with fewer leaves the rest undefined."""
    from chronos.ptx import parse

    path = ptx_path(specs_json, spec)
    module = parse(read_ptx_file(path), file=str(path))
    entry = next((fn for fn in module.entries() if fn.name == spec.entry), None)
    if entry is not None and len(entry.params) != len(spec.args):
        raise SpecError(f"{spec.kernel}: {len(spec.args)} arguments for the {len(entry.params)} "
                        f"parameters of {spec.entry} in {path}")
    module.align_contract.update(spec.alignment)
    return module
