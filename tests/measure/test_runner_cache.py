"""The runner's kernel and reference caches are keyed by launch geometry, not by the cubin alone.

Regression for the sporadic attention_d128_kv4096 fault (#12): its PTX is byte-identical to
attention_d128_kv512's (sizes are runtime arguments), so a cache keyed by cubin sha launched kv4096 with
kv512's grid (4, 16, 1) instead of (8, 8, 1) in any worker that had measured kv512 first, reading past its
2 MiB q buffer (compute-sanitizer memcheck in that worker sequence: 50 invalid 16-byte reads)."""

from __future__ import annotations

from pathlib import Path

from chronos.kernels.spec import load_specs, ptx_path
from chronos.measure.runner import GpuRunner, _launch_key

ROOT = Path(__file__).resolve().parents[2]
SPECS = ROOT / "data/kernels/triton/specs.json"


class _FakeFunc:
    def __init__(self, launches):
        self.launches = launches

    def set_attribute(self, *a):
        pass

    def prepare(self, codes):
        pass

    def prepared_async_call(self, grid, block, stream, *args, shared_size=0):
        self.launches.append(grid)


class _FakeDriver:
    class Error(Exception):
        pass

    class function_attribute:  # pycuda spells it so
        MAX_DYNAMIC_SHARED_SIZE_BYTES = 0

    def __init__(self):
        self.launches: list = []
        self.loaded = 0

    def module_from_buffer(self, cubin):
        self.loaded += 1
        launches = self.launches
        return type("M", (), {"get_function": lambda self, name: _FakeFunc(launches)})()


def _runner() -> GpuRunner:
    r = object.__new__(GpuRunner)  # no CUDA context: only the caches are under test
    r.drv, r.kernels, r.refs = _FakeDriver(), {}, {}
    return r


def test_kernels_sharing_a_cubin_launch_on_their_own_grids():
    specs = {s.kernel: s for s in load_specs(SPECS)}
    small, big = specs["attention_d128_kv512"], specs["attention_d128_kv4096"]
    assert ptx_path(SPECS, small).read_text() == ptx_path(SPECS, big).read_text()  # the trap: one PTX
    assert small.grid != big.grid
    r = _runner()
    r._kernel("same-sha", b"cubin", small).launch([])
    r._kernel("same-sha", b"cubin", big).launch([])
    r._kernel("same-sha", b"cubin", small).launch([])
    assert r.drv.launches == [small.grid, big.grid, small.grid]
    assert r.drv.loaded == 2  # one entry per (cubin, geometry); a repeat comes from the cache


def test_reference_outputs_are_keyed_by_the_spec_too():
    specs = {s.kernel: s for s in load_specs(SPECS)}
    assert _launch_key(specs["attention_d128_kv512"]) != _launch_key(specs["attention_d128_kv4096"])


def test_an_alias_argument_is_its_buffers_pointer_plus_its_offset():
    from chronos.kernels.spec import ArgSpec, KernelSpec

    spec = KernelSpec(kernel="k", family="captured", entry="k", ptx="k.ptx", grid=(1, 1, 1), block=(32, 1, 1),
                      args=(ArgSpec("b", "buffer", "f32", elements=64, role="inout"),
                            ArgSpec("v", "alias", "f32", elements=8, alias_of="b", offset=128),
                            ArgSpec("s", "null", "u64", role="null"))).validate()
    assert [int(x) for x in _runner()._args(spec, {"b": 1 << 20})] == [1 << 20, (1 << 20) + 128, 0]
