"""A variant's own launch geometry (#28): it reaches the launch and the comparison key, and travels to a
worker intact."""

from __future__ import annotations

from chronos.kernels.gemm_tile import gemm_tile_ptx, gemm_tile_spec
from chronos.kernels.variant import Launch, Variant, launched_as
from chronos.measure.runner import _Kernel
from chronos.measure.worker import _cubin, encode_cubin


class _Func:
    def __init__(self):
        self.calls, self.attrs = [], {}

    def set_attribute(self, key, value):
        self.attrs[key] = value

    def prepare(self, codes):
        self.codes = codes

    def prepared_async_call(self, grid, block, stream, *args, shared_size):
        self.calls.append((grid, block, shared_size))


class _Drv:
    class function_attribute:  # pycuda's name
        MAX_DYNAMIC_SHARED_SIZE_BYTES = "max_dynamic_shared"

    def __init__(self):
        self.func = _Func()

    def module_from_buffer(self, cubin):
        drv = self

        class _Module:
            def get_function(self, name):
                return drv.func

        return _Module()


def test_a_variant_with_its_own_launch_is_launched_and_keyed_with_it():
    spec = gemm_tile_spec(2, 2, 2)
    plain = Variant(spec, gemm_tile_ptx(2, 2, 2), ())
    wide = Variant(spec, plain.ptx, ("num_warps=8",), launch=Launch((256, 1, 1), 64 << 10))
    assert plain.key == plain.ptx_sha256 and wide.key != plain.key and wide.ptx_sha256 == plain.ptx_sha256
    assert launched_as(spec, None) is spec
    drv = _Drv()
    k = _Kernel(drv, b"cubin", launched_as(spec, wide.launch), False)
    k.launch([])
    assert drv.func.calls == [(spec.grid, (256, 1, 1), 64 << 10)]
    assert drv.func.attrs == {"max_dynamic_shared": 64 << 10}  # above 48 KiB: opted in


def test_a_launch_travels_to_the_worker_and_back():
    launch = Launch((64, 1, 1), 32)
    assert _cubin(encode_cubin("ab", b"\x00\x01", launch)) == ("ab", b"\x00\x01", launch)
    assert _cubin(encode_cubin("ab", b"\x00\x01")) == ("ab", b"\x00\x01")
    assert Launch.from_json(launch.to_json()) == launch


def test_a_baseline_with_its_own_launch_is_refused():
    import pytest

    from chronos.errors import MeasureError
    from chronos.measure.sidebyside import _check

    spec = gemm_tile_spec(2, 2, 2)
    wide = Variant(spec, gemm_tile_ptx(2, 2, 2), (), launch=Launch((256, 1, 1), 0))
    with pytest.raises(MeasureError, match=r"gemm_tile\(2,2,2\).*no launch of its own"):
        _check(spec, [wide])


def test_a_block_size_variant_launches_on_its_own_grid_and_keys_it():
    spec = gemm_tile_spec(2, 2, 2)
    ptx = gemm_tile_ptx(2, 2, 2)
    same_block = Launch(spec.block, spec.shared_bytes)
    half = Launch(spec.block, spec.shared_bytes, (2 * spec.grid[0], spec.grid[1], spec.grid[2]))
    a = Variant(spec, ptx, ("XBLOCK=2",), launch=same_block)
    b = Variant(spec, ptx, ("XBLOCK=2",), launch=half)
    assert a.key != b.key  # the grid is part of the comparison's key
    assert launched_as(spec, same_block).grid == spec.grid and launched_as(spec, half).grid == half.grid
    drv = _Drv()
    _Kernel(drv, b"cubin", launched_as(spec, half), False).launch([])
    assert drv.func.calls == [(half.grid, spec.block, spec.shared_bytes)]
    assert Launch.from_json(half.to_json()) == half and _cubin(encode_cubin("ab", b"", half))[2] == half


def test_a_recorded_config_becomes_the_variant_for_its_launch_or_says_why_there_is_none(tmp_path):
    """A manifest record (blocks, anchors, walk) launches with its own warps, shared memory and the grid
    recorded for this launch; a record without PTX or without a grid for it is a reason row."""
    import gzip

    from chronos.kernels.variant import recorded_variant

    spec = gemm_tile_spec(2, 2, 2)
    (tmp_path / "v.ptx.gz").write_bytes(gzip.compress(gemm_tile_ptx(2, 2, 2).encode()))
    record = {"ptx": "v.ptx.gz", "num_warps": 2, "shared": 16, "grids": {spec.kernel: [8, 1, 1]}}
    got = recorded_variant(tmp_path, spec, record, ("XBLOCK=4",))
    assert isinstance(got, Variant) and got.actions == ("XBLOCK=4",)
    assert got.launch == Launch((64, 1, 1), 16, (8, 1, 1)) and got.ptx == gemm_tile_ptx(2, 2, 2)
    assert recorded_variant(tmp_path, spec, {**record, "grids": {"other": [1, 1, 1]}}, ()) == {
        "valid": False, "reason": "no_grid"}
    assert recorded_variant(tmp_path, spec, {"same_as_stock": True}, ())["reason"] == "same_as_stock"
    assert recorded_variant(tmp_path, spec, {"error": "out of resource"}, ()) == {
        "valid": False, "reason": "compile_error", "log": "out of resource"}
