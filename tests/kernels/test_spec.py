"""KernelSpec: JSON round trip, validation errors that name the kernel, module loading with the contract."""

import json
from dataclasses import replace
from pathlib import Path

import pytest

from chronos.errors import SpecError
from chronos.kernels.gemm_tile import gemm_tile_spec
from chronos.kernels.spec import ArgSpec, KernelSpec, load_module, load_specs, write_specs


def test_json_round_trip(tmp_path):
    specs = [gemm_tile_spec(2, 4, 6), gemm_tile_spec(8, 8, 8)]
    write_specs(tmp_path / "specs.json", specs)
    assert load_specs(tmp_path / "specs.json") == specs


@pytest.mark.parametrize("change, message", [
    ({"grid": [0, 1, 1]}, "grid and block"),
    ({"args": [{"name": "x", "kind": "buffer", "dtype": "f99", "elements": 4}]}, "unknown dtype"),
    ({"args": [{"name": "x", "kind": "buffer", "dtype": "f32", "elements": 4, "role": "input"}]},
     "no output"),
    ({"args": [{"name": "x", "kind": "scalar", "dtype": "u32"}]}, "needs a value"),
    ({"args": [{"name": "x", "kind": "buffer", "dtype": "f32", "elements": 4, "role": "output",
                "init": "__import__('os')"}]}, "bad init"),
    ({"entry": ""}, "needs an entry"),
])
def test_validation_names_the_kernel(change, message):
    d = {**gemm_tile_spec(2, 2, 2).to_json(), **change}
    with pytest.raises(SpecError, match=message) as e:
        KernelSpec.from_json(d)
    assert "gemm_tile(2,2,2)" in str(e.value)


def test_malformed_json_is_a_spec_error(tmp_path):
    (tmp_path / "specs.json").write_text("[{")
    with pytest.raises(SpecError, match="cannot read"):
        load_specs(tmp_path / "specs.json")
    (tmp_path / "specs.json").write_text(json.dumps([{"kernel": "k"}]))
    with pytest.raises(SpecError, match="malformed kernel spec 'k'"):
        load_specs(tmp_path / "specs.json")


def test_load_module_carries_the_alignment_contract(tmp_path):
    from chronos.kernels.gemm_tile import gemm_tile_ptx

    spec = gemm_tile_spec(4, 6, 4)
    (tmp_path / spec.ptx).write_text(gemm_tile_ptx(4, 6, 4).replace(".align 16", ".align 4"))
    module = load_module(tmp_path / "specs.json", spec)
    assert module.align_contract == spec.alignment
    assert module.entry().name == spec.entry


def test_arg_bytes():
    assert ArgSpec("a", "buffer", "f16", 10, "output").nbytes == 20


def test_a_spec_missing_an_argument_is_refused_naming_the_kernel():
    """Every parameter of the PTX entry needs an argument: a launch with fewer leaves the rest undefined."""
    import dataclasses
    from pathlib import Path

    specs_json = Path(__file__).resolve().parents[2] / "data/kernels/triton/specs.json"
    spec = load_specs(specs_json)[0]
    load_module(specs_json, spec)
    short = dataclasses.replace(spec, args=spec.args[:-1])
    with pytest.raises(SpecError, match=f"{spec.kernel}: {len(spec.args) - 1} arguments for the "
                                        f"{len(spec.args)} parameters"):
        load_module(specs_json, short)


@pytest.mark.parametrize("name", ["../../x", "/tmp/abs", "a\\b", "..", ".", "", "nul\x00"])
def test_a_kernel_name_that_could_escape_its_folder_is_refused(name):
    """A kernel's name becomes file names (its tune part, its PTX): a spec naming a path is refused."""
    from chronos.kernels.spec import ArgSpec, KernelSpec

    spec = KernelSpec(kernel=name, family="captured", entry="k", ptx="k.ptx", grid=(1, 1, 1),
                      block=(32, 1, 1),
                      args=(ArgSpec("o", "buffer", "f32", elements=4, role="output", init="poison"),))
    with pytest.raises(SpecError, match="cannot name a file"):
        spec.validate()
    assert KernelSpec.validate(replace(spec, kernel="gemm_tile(4,6,8)")).kernel == "gemm_tile(4,6,8)"


def test_a_ptx_file_that_is_missing_special_binary_or_corrupt_is_one_spec_error(tmp_path):
    import gzip

    from chronos.kernels.spec import read_ptx_file

    (tmp_path / "bin.ptx").write_bytes(b"\xff\xfe\x00garbage")
    (tmp_path / "nul.ptx").write_bytes(b".version 8.0\x00")
    (tmp_path / "bad.ptx.gz").write_bytes(b"not gzip")
    (tmp_path / "dir.ptx").mkdir()
    (tmp_path / "ok.ptx.gz").write_bytes(gzip.compress(b".version 8.0\n"))
    for name, says in [("missing.ptx", "does not exist"), ("dir.ptx", "not a regular file"),
                       ("bin.ptx", "not text"), ("nul.ptx", "not PTX text"), ("bad.ptx.gz", "not text")]:
        with pytest.raises(SpecError, match=says):
            read_ptx_file(tmp_path / name)
    with pytest.raises(SpecError, match="not a regular file"):
        read_ptx_file(Path("/dev/zero"))
    assert read_ptx_file(tmp_path / "ok.ptx.gz") == ".version 8.0\n"
