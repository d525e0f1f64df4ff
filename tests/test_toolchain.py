"""ptxas discovery, assembly, -v parsing and the cubin ELF reader."""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from chronos import toolchain
from chronos.errors import PtxasError, ToolchainError
from chronos.toolchain import (
    assemble,
    cuda_gpu_available,
    elf_sections,
    find_ptxas,
    find_ptxas_with_source,
    parse_ptxas_log,
    ptxas_version,
    text_sections,
)

TINY = """\
.version 8.0
.target sm_90
.address_size 64

.visible .entry add1(
\t.param .u64 .ptr .global .align 4 add1_param_0
)
{
\t.reg .b32 \t%r<3>;
\t.reg .b64 \t%rd<3>;
\t.shared .align 4 .b8 buf[256];
\tld.param.u64 \t%rd1, [add1_param_0];
\tcvta.to.global.u64 \t%rd2, %rd1;
\tld.global.u32 \t%r1, [%rd2];
\tadd.s32 \t%r2, %r1, 1;
\tst.shared.u32 \t[buf], %r2;
\tst.global.u32 \t[%rd2], %r2;
\tret;
}

.visible .entry nop()
{
\tret;
}
"""

FAKE_VERSION = "Cuda compilation tools, release 13.0, V13.0.88"


def fake_ptxas(directory: Path, body: str = f'echo "{FAKE_VERSION}"') -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    p = directory / "ptxas"
    p.write_text(f"#!/bin/sh\n{body}\n")
    p.chmod(0o755)
    return p


@pytest.fixture
def isolated(monkeypatch, tmp_path):
    """No ptxas anywhere unless a test puts one there: env cleared, no wheels, PATH an empty dir."""
    monkeypatch.delenv("CHRONOS_PTXAS", raising=False)
    monkeypatch.delenv("CUDA_HOME", raising=False)
    packages: dict[str, list[Path]] = {}
    monkeypatch.setattr(toolchain, "_package_dirs", lambda name: packages.get(name, []))
    empty = tmp_path / "empty-bin"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))
    return packages


# ---------------------------------------------------------------- discovery
def test_env_var_wins(isolated, monkeypatch, tmp_path):
    fake = fake_ptxas(tmp_path / "env")
    isolated["nvidia"] = [tmp_path / "nv"]
    fake_ptxas(tmp_path / "nv" / "cu13" / "bin")
    monkeypatch.setenv("CHRONOS_PTXAS", str(fake))
    assert find_ptxas_with_source() == ("CHRONOS_PTXAS", fake)
    assert ptxas_version(fake) == "13.0.88"


def test_broken_env_var_is_an_error_not_a_fallthrough(isolated, monkeypatch, tmp_path):
    monkeypatch.setenv("PATH", str(fake_ptxas(tmp_path / "bin").parent))
    monkeypatch.setenv("CHRONOS_PTXAS", str(tmp_path / "nope" / "ptxas"))
    with pytest.raises(ToolchainError, match="CHRONOS_PTXAS"):
        find_ptxas()


def test_search_order(isolated, monkeypatch, tmp_path):
    triton = fake_ptxas(tmp_path / "triton" / "backends" / "nvidia" / "bin")
    cu13 = fake_ptxas(tmp_path / "nvidia" / "cu13" / "bin")
    cu12 = fake_ptxas(tmp_path / "nvidia" / "cuda_nvcc" / "bin")
    cuda_home = fake_ptxas(tmp_path / "cuda" / "bin")
    on_path = fake_ptxas(tmp_path / "path-bin")
    isolated["triton"] = [tmp_path / "triton"]
    isolated["nvidia"] = [tmp_path / "nvidia"]
    monkeypatch.setenv("CUDA_HOME", str(tmp_path / "cuda"))
    monkeypatch.setenv("PATH", str(on_path.parent))
    expected = [("nvidia-cuda-nvcc wheel", cu13), ("nvidia-cuda-nvcc-cu12 wheel", cu12),
                ("triton wheel", triton), ("CUDA_HOME", cuda_home), ("PATH", on_path)]
    for source, path in expected:
        assert find_ptxas_with_source() == (source, path)
        path.unlink()  # the next one in line takes over
    with pytest.raises(ToolchainError):
        find_ptxas()


def test_path_fallback(isolated, monkeypatch, tmp_path):
    fake = fake_ptxas(tmp_path / "bin")
    monkeypatch.setenv("PATH", str(fake.parent))
    assert find_ptxas_with_source() == ("PATH", fake)


def test_error_lists_where_it_looked(isolated, monkeypatch, tmp_path):
    isolated["nvidia"] = [tmp_path / "nvidia"]
    monkeypatch.setenv("CUDA_HOME", str(tmp_path / "cuda"))
    with pytest.raises(ToolchainError) as ei:
        find_ptxas()
    msg = str(ei.value)
    for where in ("nvidia-cuda-nvcc wheel", str(tmp_path / "nvidia" / "cu13" / "bin" / "ptxas"), "CUDA_HOME",
                  "PATH", "CHRONOS_PTXAS"):
        assert where in msg


@pytest.mark.skipif(os.environ.get("CI", "").lower() not in ("1", "true", "yes"), reason="CI only")
def test_ci_finds_a_pip_installed_ptxas():
    source, _ = find_ptxas_with_source()
    assert source in ("nvidia-cuda-nvcc wheel", "triton wheel"), "users must not need a CUDA install"


# ---------------------------------------------------------------- assembling
def test_assemble_reports_resources(ptxas):
    r = assemble(TINY, "sm_90")
    assert set(r.entries) == {"add1", "nop"}
    assert r.entries["add1"].registers > 0
    assert r.entries["add1"].shared_bytes == 256
    assert r.entries["add1"].spill_stores == r.entries["add1"].spill_loads == 0
    assert set(text_sections(r.cubin)) == {".text.add1", ".text.nop"}
    assert re_version(ptxas_version(ptxas))


def re_version(v: str) -> bool:
    return all(part.isdigit() for part in v.split(".")) and v.count(".") >= 1


def test_assemble_is_cached_and_deterministic(ptxas):
    text = TINY.replace("add.s32 \t%r2, %r1, 1", "add.s32 \t%r2, %r1, 7")
    first = assemble(text, "sm_90")
    hits = toolchain._run_ptxas.cache_info().hits
    assert assemble(text, "sm_90").cubin == first.cubin
    assert toolchain._run_ptxas.cache_info().hits == hits + 1
    toolchain._run_ptxas.cache_clear()
    assert text_sections(assemble(text, "sm_90").cubin) == text_sections(first.cubin)


def test_other_arch_gives_other_sass(ptxas):
    sm89 = assemble(TINY.replace(".target sm_90", ".target sm_89"), "sm_89").cubin
    assert text_sections(sm89) != text_sections(assemble(TINY, "sm_90").cubin)


def test_invalid_ptx_raises_with_repro(ptxas):
    bad = TINY.replace("add.s32", "add.bogus32")
    with pytest.raises(PtxasError) as ei:
        assemble(bad, "sm_90")
    err = ei.value
    assert "add.bogus32" in err.log or "error" in err.log.lower()
    argv = shlex.split(err.repro)
    saved = Path(next(a for a in argv if a.endswith(".ptx")))
    assert saved.read_text() == bad
    again = subprocess.run(argv, capture_output=True, text=True, check=False)
    assert again.returncode != 0  # the repro reproduces


def test_failing_ptxas_binary(tmp_path):
    fake = fake_ptxas(tmp_path, 'echo "ptxas fatal   : something broke" >&2; exit 3')
    with pytest.raises(PtxasError, match="something broke") as ei:
        assemble(TINY, "sm_90", ptxas=fake)
    assert str(fake) in ei.value.repro


def test_repro_copies_are_bounded(monkeypatch, tmp_path):
    # issue #11: every refusal used to leave a copy in $TMP/chronos-repro forever
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "tmp"))
    monkeypatch.setattr(toolchain, "REPRO_KEEP_FILES", 3)
    fake = fake_ptxas(tmp_path / "bin", 'echo "ptxas fatal   : refused" >&2; exit 1')
    saved = []
    for i in range(6):
        with pytest.raises(PtxasError) as ei:
            assemble(f"{TINY}// variant {i}\n", "sm_90", ptxas=fake)
        saved.append(Path(next(a for a in shlex.split(ei.value.repro) if a.endswith(".ptx"))))
        assert saved[-1].read_text().endswith(f"// variant {i}\n")  # the newest copy is always kept
        os.utime(saved[-1], ns=(i * 10**9, i * 10**9))  # distinct ages, oldest first
    assert sorted((tmp_path / "tmp" / "chronos-repro").iterdir()) == sorted(saved[-3:])


def test_prune_repros_caps_bytes_and_keeps_the_new_file(tmp_path):
    files = []
    for i in range(5):
        f = tmp_path / f"{i}.ptx"
        f.write_bytes(b"x" * 100)
        os.utime(f, ns=(i * 10**9, i * 10**9))
        files.append(f)
    deleted = toolchain.prune_repros(tmp_path, keep=files[0], max_files=10, max_bytes=300)
    assert sorted(deleted) == files[1:3]  # files[0] stays although oldest; then the two newest fit
    assert sorted(tmp_path.iterdir()) == [files[0], *files[3:]]
    assert sorted(toolchain.prune_repros(tmp_path, max_files=1, max_bytes=10**6)) == [files[0], files[3]]


def test_bad_arguments_rejected_before_running():
    with pytest.raises(ToolchainError, match="arch"):
        assemble(TINY, "sm90; rm -rf /")
    with pytest.raises(ToolchainError, match="name"):
        assemble(TINY, "sm_90", name="../x")


def test_parse_ptxas_log():
    log = """\
ptxas info    : 0 bytes gmem
ptxas info    : Function properties for helper
    8 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas info    : Compiling entry function 'k' for 'sm_90'
ptxas info    : Function properties for k
    16 bytes stack frame, 12 bytes spill stores, 20 bytes spill loads
ptxas info    : Used 255 registers, used 1 barriers, 4096 bytes smem, 400 bytes cmem[0]
"""
    res = parse_ptxas_log(log)
    assert set(res) == {"k"}
    k = res["k"]
    got = (k.registers, k.spill_stores, k.spill_loads, k.shared_bytes, k.stack_frame)
    assert got == (255, 12, 20, 4096, 16)


# ---------------------------------------------------------------- ELF
def test_elf_sections_of_real_cubin(ptxas):
    cubin = assemble(TINY, "sm_90").cubin
    sections = elf_sections(cubin)
    assert ".shstrtab" in sections and ".nv.info" in sections
    text = text_sections(cubin)
    assert all(len(v) > 0 and len(v) % 16 == 0 for v in text.values())  # SASS is 128-bit instructions


@pytest.mark.parametrize("blob", [b"", b"not an elf at all", b"\x7fELF\x01\x01" + b"\0" * 60])
def test_text_sections_rejects_non_elf64(blob):
    with pytest.raises(ToolchainError):
        text_sections(blob)


def test_text_sections_rejects_truncated_cubin(ptxas):
    cubin = assemble(TINY, "sm_90").cubin
    with pytest.raises(ToolchainError):
        text_sections(cubin[: len(cubin) // 2])


# ---------------------------------------------------------------- GPU probe
def test_gpu_probe_never_raises(monkeypatch):
    toolchain.gpu_name.cache_clear()
    monkeypatch.setitem(sys.modules, "pycuda", None)  # import pycuda -> ImportError
    monkeypatch.setitem(sys.modules, "pycuda.driver", None)
    try:
        assert cuda_gpu_available() is False
    finally:
        toolchain.gpu_name.cache_clear()
