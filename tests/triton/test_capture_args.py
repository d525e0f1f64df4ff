"""Launch records into spec arguments: tensors that share memory (one buffer plus views into it) and empty
tensors (null pointers), as real libraries launch them."""

from __future__ import annotations

import pytest

from chronos.errors import SpecError
from chronos.kernels.spec import ArgSpec, KernelSpec
from chronos.triton.capture_args import CaptureError, aliases, map_args

PTRS = [("p_in", "u64", True), ("p_bias", "u64", True), ("p_out", "u64", True), ("p_pre", "u64", True),
        ("n", "u32", False)]


def _t(name, ptr, elements=1024, **kw):
    return {"name": name, "kind": "tensor", "dtype": "f32", "elements": elements, "ptr": ptr,
            "align16": ptr % 16 == 0, "mutated": True, "write_only": False, "mean": 0.0, "std": 1.0, **kw}


def _linear_record(bias_ptr=1 << 20, pre_ptr=1 << 24):
    """attorch's linear launch: no bias passes the input as bias, no kept pre-activation the output."""
    return {"args": [_t("input_pointer", 1 << 20), _t("bias_pointer", bias_ptr, elements=64),
                     _t("output_pointer", 1 << 24), _t("pre_act_pointer", pre_ptr),
                     {"name": "n", "kind": "scalar", "value": 64, "pytype": "int"}], "constants": {}}


def test_a_tensor_passed_twice_becomes_an_alias_of_one_buffer():
    args, align = map_args(_linear_record(), PTRS)
    assert [a.kind for a in args] == ["buffer", "alias", "buffer", "alias", "scalar"]
    assert (args[1].alias_of, args[1].offset, args[1].elements) == ("p_in", 0, 64)
    assert (args[3].alias_of, args[3].offset) == ("p_out", 0)
    assert args[0].role == args[2].role == "inout"
    assert align["p_bias"] == 16
    KernelSpec(kernel="k", family="captured", entry="k", ptx="k.ptx", grid=(1, 1, 1), block=(32, 1, 1),
               args=tuple(args)).validate()


def test_distinct_tensors_are_separate_buffers():
    args, _ = map_args(_linear_record(bias_ptr=1 << 22, pre_ptr=1 << 26), PTRS)
    assert [a.kind for a in args] == ["buffer", "buffer", "buffer", "buffer", "scalar"]


def test_a_view_inside_a_larger_tensor_keeps_its_offset_and_the_holder_takes_both_roles():
    rec = [_t("whole", 4096, write_only=True, mutated=True),
           _t("view", 4096 + 512, elements=16, mutated=False)]
    assert aliases(rec) == {"view": ("whole", 512)}
    args, _ = map_args({"args": rec, "constants": {}}, PTRS[:2])
    assert (args[0].kind, args[0].role) == ("buffer", "inout")
    assert args[0].init.startswith("normal(")  # an output became read too: it is drawn, not poisoned
    assert (args[1].kind, args[1].offset) == ("alias", 512)


def test_partial_overlap_and_misaligned_views_cannot_be_reproduced():
    with pytest.raises(CaptureError, match="overlap in memory without one holding the other"):
        aliases([_t("a", 4096), _t("b", 4096 + 128)])
    rec = {"args": [_t("a", 4096 + 4), _t("b", 4096 + 4 + 8, elements=4)], "constants": {}}
    rec["args"][1]["align16"] = True  # specialised aligned at an offset of 8: not reproducible
    with pytest.raises(CaptureError, match="cannot reproduce"):
        map_args(rec, PTRS[:2])


def test_an_empty_tensor_is_passed_as_a_null_pointer():
    rec = {"args": [_t("q", 4096), _t("full_kv_num_blks", 1 << 20, elements=0)], "constants": {}}
    args, _ = map_args(rec, PTRS[:2])
    assert [a.kind for a in args] == ["buffer", "null"]


def test_an_alias_outside_its_buffer_or_naming_no_buffer_is_refused():
    base = ArgSpec("b", "buffer", "f32", elements=16, role="inout")
    for bad in (ArgSpec("a", "alias", "f32", elements=8, alias_of="b", offset=40),
                ArgSpec("a", "alias", "f32", elements=8, alias_of="zz", offset=0)):
        with pytest.raises(SpecError, match="must lie inside"):
            KernelSpec(kernel="k", family="captured", entry="k", ptx="k.ptx", grid=(1, 1, 1),
                       block=(32, 1, 1), args=(base, bad)).validate()
    with pytest.raises(SpecError, match="names the buffer"):
        ArgSpec("a", "alias", "f32", elements=8).validate("k")
    spec = KernelSpec(kernel="k", family="captured", entry="k", ptx="k.ptx", grid=(1, 1, 1), block=(32, 1, 1),
                      args=(base, ArgSpec("a", "alias", "f32", elements=8, alias_of="b", offset=32)))
    assert KernelSpec.from_json(spec.to_json()) == spec.validate()
