"""scripts/adopt_inputs.py: a recapture's inputs reach the corpus only for identical PTX and fitting files;
--respec-invalid replaces only the specs of kernels whose tune part had an invalid baseline."""

from __future__ import annotations

import importlib.util
import json
import shutil
from pathlib import Path

import numpy as np

from chronos.measure.inputs import NP_DTYPES

ROOT = Path(__file__).resolve().parents[1]
GPT2 = ROOT / "data/kernels/captured/gpt2"
NLL = "triton_red_fused__log_softmax__to_copy_clone_nll_loss_forward_slice_sub_view_2_6d05f204_127160"


def _module():
    spec = importlib.util.spec_from_file_location("adopt_inputs", ROOT / "scripts/adopt_inputs.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _copy(dst: Path, kernels: list[dict]) -> Path:
    (dst / "tune-parts").mkdir(parents=True)
    shutil.copytree(GPT2 / "ptx", dst / "ptx")
    (dst / "specs.json").write_text(json.dumps(kernels, indent=1) + "\n")
    for k in kernels:
        part = GPT2 / "tune-parts" / f"{k['kernel']}.json"
        if part.is_file():
            shutil.copyfile(part, dst / "tune-parts" / part.name)
    return dst


def _write_inputs(d: Path, kernel: dict, wrong_size: str = "") -> None:
    for a in kernel["args"]:
        if a.get("data"):
            n = a["elements"] + (1 if a["name"] == wrong_size else 0)
            (d / a["data"]).parent.mkdir(parents=True, exist_ok=True)
            np.save(d / a["data"], np.zeros(n, dtype=NP_DTYPES[a["dtype"]]))


def test_adopts_fitting_inputs_of_identical_kernels_and_respecs_only_invalid(tmp_path):
    raw = json.loads((GPT2 / "specs.json").read_text())
    small = [k for k in raw if sum(a["elements"] for a in k["args"] if a.get("data")) < 1e6 and
             any(a.get("data") for a in k["args"]) and k["args"][0]["dtype"] in ("f32", "bf16")][:2]
    nll = next(k for k in raw if k["kernel"] == NLL)
    corpus = _copy(tmp_path / "corpus", [*small, nll])
    # its baseline faulted on the old integer range (the record before the respecification, 2026-12-02 n2)
    (corpus / "tune-parts" / f"{NLL}.json").write_text(json.dumps(
        {"kernel": NLL, "baseline": {"valid": False, "reason": "fault:CUDA_ERROR_ASSERT"}}))
    fixed = json.loads(json.dumps(nll))
    target = next(a for a in fixed["args"] if a["dtype"] == "i64")
    target["init"] = "randint(-100,50257)"
    recap = _copy(tmp_path / "recap", [*small, fixed])
    _write_inputs(recap, small[0])
    _write_inputs(recap, small[1], wrong_size=small[1]["args"][0]["name"])
    mod = _module()

    changed = mod.respec_invalid(recap, corpus)
    assert changed == [NLL]  # the only one whose part records an invalid baseline
    assert not (corpus / "tune-parts" / f"{NLL}.json").exists()
    assert all((corpus / "tune-parts" / f"{k['kernel']}.json").exists() for k in small)
    now = {k["kernel"]: k for k in json.loads((corpus / "specs.json").read_text())}
    assert any(a["init"] == "randint(-100,50257)" for a in now[NLL]["args"])
    assert [now[k["kernel"]] for k in small] == small

    outcome = mod.adopt(recap, corpus)
    n0 = sum(1 for a in small[0]["args"] if a.get("data"))
    assert outcome["input_adopted"] >= n0
    assert outcome["input_unfit"] == 1  # the one written one element too long is refused and removed
    assert all((corpus / a["data"]).is_file() for a in small[0]["args"] if a.get("data"))
    assert not (corpus / small[1]["args"][0]["data"]).exists()


def test_different_ptx_adopts_nothing(tmp_path):
    raw = json.loads((GPT2 / "specs.json").read_text())
    k = next(k for k in raw if any(a.get("data") for a in k["args"]) and
             sum(a["elements"] for a in k["args"] if a.get("data")) < 1e6)
    corpus = _copy(tmp_path / "corpus", [k])
    recap = _copy(tmp_path / "recap", [k])
    _write_inputs(recap, k)
    ptx = recap / k["ptx"]
    import gzip

    ptx.write_bytes(gzip.compress(gzip.decompress(ptx.read_bytes()) + b"\n// changed\n"))
    assert _module().adopt(recap, corpus) == {"ptx_differs": 1}


def test_a_kernel_captured_again_is_found_by_its_launch_under_another_name_and_path(tmp_path):
    import gzip

    raw = json.loads((GPT2 / "specs.json").read_text())
    k = next(k for k in raw if any(a.get("data") for a in k["args"]) and
             sum(a["elements"] for a in k["args"] if a.get("data")) < 1e6)
    corpus = _copy(tmp_path / "corpus", [k])
    entry = k["kernel"].rsplit("_", 2)[0]
    moved = {**k, "kernel": f"{entry}_0badc0de_ffffff"}  # another compile hash and signature hash
    recap = _copy(tmp_path / "recap", [moved])
    ptx = recap / k["ptx"]
    text = gzip.decompress(ptx.read_bytes()).decode()
    assert "\t.file\t1 \"/work/main/" in text
    text = text.replace("\t.file\t1 \"/work/main/", "\t.file\t1 \"/elsewhere/")
    ptx.write_bytes(gzip.compress(text.encode()))
    _write_inputs(recap, moved)
    assert _module().adopt(recap, corpus) == {"input_adopted": sum(1 for a in k["args"] if a.get("data"))}


def test_add_missing_adds_the_recaptures_new_kernel_and_its_drop_list(tmp_path):
    """A recapture that maps a launch the corpus could not (flex's empty block-mask tensor) adds that kernel,
    with its PTX and Triton identity, and the corpus takes the recapture's (empty) drop list."""
    flex = ROOT / "data/kernels/captured/flex"
    recap = tmp_path / "recap"
    shutil.copytree(flex, recap, ignore=shutil.ignore_patterns("tune-parts", "*.pt"))
    cap = json.loads((recap / "capture.json").read_text())
    cap.update(dropped=[], dropped_launches=0, unmapped=[])
    (recap / "capture.json").write_text(json.dumps(cap))
    kernels = json.loads((flex / "specs.json").read_text())
    corpus = tmp_path / "corpus"
    shutil.copytree(flex, corpus, ignore=shutil.ignore_patterns("tune-parts", "*.pt"))
    (corpus / "specs.json").write_text(json.dumps(kernels[:-1], indent=1) + "\n")
    (corpus / "ptx" / Path(kernels[-1]["ptx"]).name).unlink()
    mod = _module()
    assert mod.add_missing(recap, corpus) == [kernels[-1]["kernel"]]
    assert json.loads((corpus / "specs.json").read_text()) == kernels
    assert (corpus / kernels[-1]["ptx"]).is_file()
    after = json.loads((corpus / "capture.json").read_text())
    assert after["dropped_launches"] == 0 and after["unmapped"] == []
    assert after["added"] == [kernels[-1]["kernel"]] and after["distinct_ptx"] == after["kernels"] == 8
    assert mod.add_missing(recap, corpus) == []  # nothing left to add: a second run changes nothing
