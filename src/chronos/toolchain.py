"""The CUDA toolchain as Chronos uses it: find ptxas, assemble PTX to a cubin, read the cubin's SASS.

Users must not need /usr/local/cuda: ptxas is looked for in pip-installed places first (Triton's bundled
copy, the `nvidia-cuda-nvcc` wheel), then a CUDA install, then PATH.
"""

from __future__ import annotations

import functools
import hashlib
import importlib.util
import os
import re
import shlex
import shutil
import stat
import struct
import subprocess
import tempfile
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from chronos.errors import PtxasError, ToolchainError

PTXAS_TIMEOUT_S = 300


# ---------------------------------------------------------------- discovery
def _package_dirs(name: str) -> list[Path]:
    """Directories of a top-level (namespace) package, found without importing it."""
    try:
        spec = importlib.util.find_spec(name)
    except (ImportError, ValueError):
        return []
    if spec is None or spec.submodule_search_locations is None:
        return []
    return [Path(p) for p in spec.submodule_search_locations]


def ptxas_candidates() -> Iterator[tuple[str, Path]]:
    """(source, path) pairs in search order; the paths need not exist."""
    env = os.environ.get("CHRONOS_PTXAS")
    if env:
        yield "CHRONOS_PTXAS", Path(env)
    # The pinned CUDA 13 wheel first: Triton's bundled ptxas (12.8 in Triton 3.6) rejects PTX ISA 9.0, and
    # installing Triton (the chronos.triton tests need it) must not change which ptxas the project uses.
    for d in _package_dirs("nvidia"):
        yield "nvidia-cuda-nvcc wheel", d / "cu13" / "bin" / "ptxas"
        yield "nvidia-cuda-nvcc-cu12 wheel", d / "cuda_nvcc" / "bin" / "ptxas"
    for d in _package_dirs("triton"):
        yield "triton wheel", d / "backends" / "nvidia" / "bin" / "ptxas"
    cuda_home = os.environ.get("CUDA_HOME")
    if cuda_home:
        yield "CUDA_HOME", Path(cuda_home) / "bin" / "ptxas"
    which = shutil.which("ptxas")
    yield "PATH", Path(which) if which else Path("ptxas")


def _is_executable(p: Path) -> bool:
    return p.is_file() and os.access(p, os.X_OK)


def find_ptxas_with_source() -> tuple[str, Path]:
    """Like find_ptxas, also naming where the binary came from (for `chronos doctor`)."""
    looked: list[str] = []
    for source, path in ptxas_candidates():
        if _is_executable(path):
            return source, path
        if source == "CHRONOS_PTXAS":
            # An explicit choice that is broken must not silently fall through to another ptxas.
            raise ToolchainError(f"CHRONOS_PTXAS={path} is not an executable file")
        looked.append(f"{source}: {path}")
    raise ToolchainError(
        "ptxas not found; looked in " + "; ".join(looked)
        + ". Install it with `pip install nvidia-cuda-nvcc` or set CHRONOS_PTXAS=/path/to/ptxas"
    )


def find_ptxas() -> Path:
    """The ptxas binary to use. Raises ToolchainError listing every place it looked."""
    return find_ptxas_with_source()[1]


@functools.lru_cache(maxsize=16)
def ptxas_version(path: str | os.PathLike[str] | None = None) -> str:
    """ptxas's version, e.g. "13.0.88" (the `V13.0.88` in `ptxas --version`)."""
    exe = str(path) if path is not None else str(find_ptxas())
    try:
        out = subprocess.run([exe, "--version"], check=False, capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired) as e:
        raise ToolchainError(f"cannot run {exe} --version: {e}") from e
    m = re.search(r"\bV(\d+(?:\.\d+)+)", out.stdout + out.stderr)
    if out.returncode != 0 or not m:
        raise ToolchainError(f"{exe} --version gave no version (exit {out.returncode})")
    return m.group(1)


# ---------------------------------------------------------------- assembling
@dataclass(frozen=True)
class EntryResources:
    """What `ptxas -v` reports for one entry function."""

    registers: int = 0
    spill_stores: int = 0  # bytes
    spill_loads: int = 0  # bytes
    shared_bytes: int = 0  # static shared memory
    stack_frame: int = 0  # bytes


@dataclass(frozen=True)
class PtxasResult:
    cubin: bytes
    entries: dict[str, EntryResources]
    log: str
    arch: str
    ptxas: str
    argv: tuple[str, ...]


_COMPILING = re.compile(r"Compiling entry function '([^']+)'")
_PROPS = re.compile(r"Function properties for (\S+)")
_STACK = re.compile(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads")
_USED = re.compile(r"Used (\d+) registers")
_SMEM = re.compile(r"(\d+) bytes smem")


def parse_ptxas_log(log: str) -> dict[str, EntryResources]:
    """Per-entry resources from `ptxas -v` output. Non-entry `.func`s are left out."""
    fields: dict[str, dict[str, int]] = {}
    entry: str | None = None  # the entry whose "Used N registers" line comes next
    props: str | None = None  # the function whose stack/spill line comes next
    for line in log.splitlines():
        if m := _COMPILING.search(line):
            entry = m.group(1)
            fields.setdefault(entry, {})
        elif m := _PROPS.search(line):
            props = m.group(1)
        elif (m := _STACK.search(line)) and props is not None:
            if props in fields:
                f = fields[props]
                f["stack_frame"], f["spill_stores"], f["spill_loads"] = map(int, m.groups())
            props = None
        elif (m := _USED.search(line)) and entry is not None:
            fields[entry]["registers"] = int(m.group(1))
            if s := _SMEM.search(line):
                fields[entry]["shared_bytes"] = int(s.group(1))
    return {name: EntryResources(**f) for name, f in fields.items()}


def _repro_path(ptx: str, sha: str) -> Path:
    """Keep a copy of PTX that ptxas rejected, so the error's command line can be re-run.

    The directory outlives the process, so every write prunes it to the newest REPRO_KEEP_FILES files
    and REPRO_KEEP_BYTES bytes: a search that meets many refusals must not fill the temp disk."""
    d = Path(tempfile.gettempdir()) / "chronos-repro"
    d.mkdir(parents=True, exist_ok=True)
    p = d / f"{sha[:16]}.ptx"
    p.write_text(ptx)
    prune_repros(d, keep=p)
    return p


REPRO_KEEP_FILES = 200
REPRO_KEEP_BYTES = 64 * 2**20


def prune_repros(d: Path, *, keep: Path | None = None, max_files: int | None = None,
                 max_bytes: int | None = None) -> list[Path]:
    """Delete the oldest files of `d` beyond max_files / max_bytes (module defaults); `keep` always stays.
    Returns what was deleted. Other processes may prune the same directory at the same time, so files
    that vanish meanwhile are skipped."""
    max_files = REPRO_KEEP_FILES if max_files is None else max_files
    max_bytes = REPRO_KEEP_BYTES if max_bytes is None else max_bytes
    found = []
    for f in d.iterdir():
        try:
            st = f.stat()
        except FileNotFoundError:
            continue
        if stat.S_ISREG(st.st_mode):
            found.append((f != keep, -st.st_mtime_ns, f.name, st.st_size, f))  # `keep` first, then newest
    found.sort()
    count = total = 0
    deleted = []
    for _not_keep, _age, _name, size, f in found:
        count, total = count + 1, total + size
        if f != keep and (count > max_files or total > max_bytes):
            f.unlink(missing_ok=True)
            deleted.append(f)
    return deleted


@functools.lru_cache(maxsize=256)
def _run_ptxas(ptxas: str, ptx: str, arch: str, extra_args: tuple[str, ...], name: str):
    """(returncode, log, cubin) for one PTX text. Cached: tests assemble the same text many times."""
    with tempfile.TemporaryDirectory(prefix="chronos-ptxas-") as tmp:
        src = Path(tmp) / f"{name}.ptx"
        out = Path(tmp) / f"{name}.cubin"
        src.write_text(ptx)
        argv = [ptxas, f"-arch={arch}", "-v", *extra_args, str(src), "-o", str(out)]
        # Timeouts and OSErrors propagate (and so are not cached); assemble() turns them into PtxasError.
        proc = subprocess.run(argv, check=False, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                              errors="replace", timeout=PTXAS_TIMEOUT_S)
        cubin = out.read_bytes() if proc.returncode == 0 and out.is_file() else b""
        return proc.returncode, proc.stdout, cubin


def assemble(
    ptx: str,
    arch: str,
    *,
    extra_args: Sequence[str] = (),
    name: str = "kernel",
    ptxas: str | os.PathLike[str] | None = None,
) -> PtxasResult:
    """Assemble PTX for `arch` (e.g. "sm_90a", "sm_89") with `ptxas -v`.

    Raises PtxasError with ptxas's log and a command line that reproduces the failure on a saved copy
    of the PTX.
    """
    if not re.fullmatch(r"sm_\d+[a-z]?", arch):
        raise ToolchainError(f"bad arch {arch!r}: expected e.g. sm_90a, sm_90, sm_89")
    if not re.fullmatch(r"[\w.-]+", name):
        raise ToolchainError(f"bad name {name!r}: use letters, digits, '_', '.', '-'")
    exe = str(ptxas) if ptxas is not None else str(find_ptxas())
    extra = tuple(str(a) for a in extra_args)
    try:
        rc, log, cubin = _run_ptxas(exe, ptx, arch, extra, name)
    except subprocess.TimeoutExpired:
        rc, log, cubin = -1, f"ptxas timed out after {PTXAS_TIMEOUT_S} s", b""
    except OSError as e:
        rc, log, cubin = -1, f"cannot run ptxas: {e}", b""
    if rc != 0 or not cubin:
        sha = hashlib.sha256(ptx.encode()).hexdigest()
        saved = _repro_path(ptx, sha)
        cubin_path = str(saved.with_suffix(".cubin"))
        repro = shlex.join([exe, f"-arch={arch}", "-v", *extra, str(saved), "-o", cubin_path])
        errors = (ln.strip() for ln in log.splitlines() if "error" in ln.lower() or "fatal" in ln.lower())
        first = next(errors, log.strip().splitlines()[0] if log.strip() else "no output")
        raise PtxasError(f"ptxas failed (exit {rc}) for {arch}: {first}", log=log, repro=repro)
    return PtxasResult(cubin=cubin, entries=parse_ptxas_log(log), log=log, arch=arch, ptxas=exe,
                       argv=(exe, f"-arch={arch}", "-v", *extra))


# ---------------------------------------------------------------- cubin (ELF64) reading
_EHDR = struct.Struct("<16sHHIQQQIHHHHHH")
_SHDR = struct.Struct("<IIQQQQIIQQ")
_SHT_NOBITS = 8
_SHN_XINDEX = 0xFFFF


def _cstr(table: bytes, off: int) -> str:
    end = table.find(b"\0", off)
    return table[off: end if end >= 0 else len(table)].decode("ascii", "replace")


def elf_sections(blob: bytes) -> dict[str, bytes]:
    """All named sections of a little-endian ELF64 file (a cubin), name -> contents."""
    if len(blob) < _EHDR.size or blob[:4] != b"\x7fELF" or blob[4] != 2 or blob[5] != 1:
        raise ToolchainError("not a little-endian ELF64 cubin")
    h = _EHDR.unpack_from(blob)
    shoff, shentsize, shnum, shstrndx = h[6], h[11], h[12], h[13]
    if shoff == 0:
        return {}
    if shentsize < _SHDR.size or shoff + shentsize > len(blob):
        raise ToolchainError("cubin section header table out of bounds")

    def header(i: int) -> tuple:
        off = shoff + i * shentsize
        if off + _SHDR.size > len(blob):
            raise ToolchainError(f"cubin section header {i} out of bounds")
        return _SHDR.unpack_from(blob, off)

    # Large section counts / string-table indices spill into section 0 (ELF extended numbering).
    sh0 = header(0)
    if shnum == 0:
        shnum = sh0[5]
    if shstrndx == _SHN_XINDEX:
        shstrndx = sh0[6]
    headers = [header(i) for i in range(shnum)]

    def contents(sh: tuple) -> bytes:
        off, size = sh[4], sh[5]
        if sh[1] == _SHT_NOBITS:
            return b""
        if off + size > len(blob):
            raise ToolchainError("cubin section contents out of bounds")
        return blob[off: off + size]

    if shstrndx >= len(headers):
        raise ToolchainError("cubin section-name table index out of range")
    names = contents(headers[shstrndx])
    return {_cstr(names, sh[0]): contents(sh) for sh in headers[1:]}


def text_sections(cubin: bytes) -> dict[str, bytes]:
    """The `.text.<function>` sections (the SASS) of a cubin."""
    return {k: v for k, v in elf_sections(cubin).items() if k.startswith(".text.")}


# ---------------------------------------------------------------- GPU
@functools.lru_cache(maxsize=1)
def gpu_name() -> str | None:
    """Name of CUDA device 0 via pycuda, or None (no pycuda, no driver, no device). Never raises."""
    try:
        import pycuda.driver as drv

        drv.init()
        if drv.Device.count() < 1:
            return None
        return str(drv.Device(0).name())
    except Exception:  # noqa: BLE001 - any failure here just means "no usable GPU"
        return None


def cuda_gpu_available() -> bool:
    """True iff pycuda imports and a CUDA device is visible. Never raises."""
    return gpu_name() is not None
