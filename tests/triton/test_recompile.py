"""Compile knobs from a kernel's TTIR (#28): the values a census tries; the committed variants assemble."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from chronos.toolchain import assemble
from chronos.triton.recompile import KNOB_VALUES, knob_label, single_knobs

CAPTURED = Path(__file__).resolve().parents[2] / "data" / "kernels" / "captured"


def test_single_knobs_skip_stock_and_blocks_over_1024_threads():
    got = single_knobs({"num_warps": 4, "num_stages": 1, "maxnreg": None})
    assert ("num_warps", 4) not in got and ("num_stages", 1) not in got
    assert ("num_warps", 32) in got and ("maxnreg", 255) in got
    assert len(got) == sum(len(v) for v in KNOB_VALUES.values()) - 2
    assert knob_label("num_warps", 8) == "num_warps=8"


def _one_variant_per_knob():
    for manifest in sorted(CAPTURED.glob("*/knobs.json")):
        seen = set()
        for entry in json.loads(manifest.read_text())["kernels"].values():
            for v in entry.get("variants", []):
                if "ptx" in v and v["knob"] not in seen:
                    seen.add(v["knob"])
                    yield manifest.parent / v["ptx"]


@pytest.mark.parametrize("path", list(_one_variant_per_knob()), ids=lambda p: f"{p.parts[-4]}/{p.name}")
def test_committed_knob_variants_assemble(path, ptxas):
    ptx = gzip.decompress(path.read_bytes()).decode()
    res = assemble(ptx, "sm_90a", ptxas=str(ptxas), name="knob_variant")
    assert res.cubin and res.entries


def test_a_stock_kernel_is_remade_from_its_ttir(tmp_path, ptxas, monkeypatch):
    """The committed TTIR and metadata remake the stock PTX, on any machine with Triton 3.6 (no GPU), given a
    ptxas that knows the stock's PTX ISA version (Triton assembles what it compiles)."""
    triton = pytest.importorskip("triton")  # the GPU image or a Triton install; CI reads committed results
    from chronos.toolchain import ptxas_version

    if int(ptxas_version(str(ptxas)).split(".")[0]) < 13:
        pytest.skip(f"ptxas {ptxas} ({ptxas_version(str(ptxas))}) cannot assemble the stock's PTX ISA 9.0")
    monkeypatch.setenv("TRITON_PTXAS_PATH", str(ptxas))
    from chronos.triton.recompile import ptx_version_of, recompile
    from chronos.triton.tuned_db import ptx_identity_sha256

    folder = CAPTURED / "flex"
    entry = json.loads((folder / "knobs.json").read_text())["kernels"]
    stock_file, e = next((k, e) for k, e in sorted(entry.items()) if e.get("remade_stock"))
    meta = json.loads((folder / e["ttir"].replace(".ttir.gz", ".json")).read_text())
    ttir = tmp_path / "k.ttir"
    ttir.write_bytes(gzip.decompress((folder / e["ttir"]).read_bytes()))
    stock = gzip.decompress((folder / stock_file).read_bytes()).decode()
    if triton.__version__ != meta.get("triton_version"):
        pytest.skip(f"Triton {triton.__version__} is not the capture's {meta.get('triton_version')}")
    remade = recompile(ttir, meta, ptx_version=ptx_version_of(stock))
    assert ptx_identity_sha256(remade.ptx) == ptx_identity_sha256(stock)
    assert remade.num_warps == e["stock"]["num_warps"]
