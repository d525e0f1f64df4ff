"""The joint space's block-size step (#28): block variants launch on their own grid beside stock and the
earlier winner; PTX actions go on top of a block winner with its launch; the speedup is the confirmed one."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from chronos.errors import ChronosError
from chronos.search.knob_blocks import block_variants, blocks_kernel, blocks_summary, nothing_to_try
from chronos.search.knob_census import census_family

from .stub_backend import StubBackend, gpt2_kernel

ROOT = Path(__file__).resolve().parents[2]
GPT2 = ROOT / "data" / "kernels" / "captured" / "gpt2"


def _kernel_with_blocks(tmp_path):
    """gpt2's first kernel with knob variants, given two made-up block variants (a knob variant's PTX,
    another grid) in a copy of its folder."""
    folder, spec, v, grid = gpt2_kernel(tmp_path)
    blocks = {"kernels": {spec.ptx: {"remade_stock": True, "variants": [
        {"label": "XBLOCK=512", "ptx": v["ptx"], "num_warps": v["num_warps"], "shared": v["shared"],
         "grids": {spec.kernel: grid}},
        {"label": "XBLOCK=4096", "error": "OutOfResources: shared memory"},
        {"label": "XBLOCK=256", "ptx": v["ptx"], "num_warps": 1, "shared": 0, "grids": {}}]}}}
    (folder / "blocks.json").write_text(json.dumps(blocks))
    return folder, spec, grid


def test_block_variants_launch_on_their_own_grid_and_the_rest_are_said(tmp_path):
    folder, spec, grid = _kernel_with_blocks(tmp_path)
    variants, others = block_variants(folder, spec)
    assert [v.actions for v in variants] == [("XBLOCK=512",)] and variants[0].launch.grid == tuple(grid)
    reasons = {o["action"]: o["reason"] for o in others}
    assert reasons == {"XBLOCK=4096": "compile_error", "XBLOCK=256": "no_grid"}


def test_a_block_winner_gets_ptx_actions_on_top_with_its_launch_and_is_confirmed(tmp_path):
    folder, spec, grid = _kernel_with_blocks(tmp_path)
    backend = StubBackend({"XBLOCK=512": 0.9})
    row = blocks_kernel(spec, folder, None, backend, timing=None, min_gain=0.01)
    first, second, confirm = backend.seen
    assert [v.actions for v in first] == [(), ("XBLOCK=512",)]
    assert second[1].actions == ("XBLOCK=512",) and len(second) > 2
    assert all(v.actions[0] == "XBLOCK=512" and v.launch.grid == tuple(grid) for v in second[1:])
    assert [v.actions for v in confirm] == [(), ("XBLOCK=512",)]
    assert row["block_root"] and not row["ptx_on_top"] and abs(row["speedup"] - 1 / 0.9) < 1e-12
    s = blocks_summary([{"family": "captured/gpt2", **row}])
    assert s["measured"] == s["faster"] == s["block_root"] == 1 and s["blocks"]["XBLOCK"]["variant"] == 1


def test_an_earlier_winner_that_stays_fastest_is_confirmed_beside_stock_alone(tmp_path):
    folder, spec, _ = _kernel_with_blocks(tmp_path)
    prior = block_variants(folder, spec)[0][0].__class__(spec, "// prior", ("num_warps=2",))
    backend = StubBackend({"XBLOCK=512": 0.97, "num_warps=2": 0.95})
    row = blocks_kernel(spec, folder, prior, backend, timing=None, min_gain=0.01)
    assert [v.actions for v in backend.seen[1]] == [(), ("num_warps=2",)]
    assert row["best"]["actions"] == ["num_warps=2"] and not row["block_root"]
    none = blocks_kernel(spec, folder, None, StubBackend({}), timing=None, min_gain=0.01)
    assert none["speedup"] == 1.0 and none["best"]["verdict"] == "none"


def test_a_kernel_without_a_blocks_manifest_is_a_row_not_a_stage_error(tmp_path):
    folder, spec, _ = _kernel_with_blocks(tmp_path)
    (folder / "blocks.json").unlink()  # as for a workload of hand-written kernels (attorch_lm)
    with pytest.raises(ChronosError, match="make_block_variants"):
        nothing_to_try(spec, folder, None)
    rows = census_family("f", [(None, spec)], measure=None, parts=tmp_path / "parts", replay=True,
                         out_of_budget=lambda: False, provenance=dict,
                         settled=lambda s: nothing_to_try(s, folder, None))
    assert rows[0]["kernel"] == spec.kernel and "make_block_variants" in rows[0]["error"]


def test_a_blocks_part_measured_without_knob_ptxs_winner_now_counts_at_that_winner(tmp_path, monkeypatch):
    """A knob_blocks part whose comparison did not hold knob_ptx's winner as it is now (a later knob_ptx part
    changed it) is stale: v3_winner gives the earlier winner, as the stage's replay counts it (gpt2's
    embedding_dense_backward_18, 2026-12-07: its walk read "stock" beside a knob_ptx winner)."""
    from types import SimpleNamespace

    from chronos.search import knob_blocks

    prior = SimpleNamespace(actions=("num_warps=2", "st_cache_cs"))
    monkeypatch.setattr(knob_blocks, "prior_winner", lambda *a: prior)
    part = tmp_path / "blocks" / "w" / "k.json"
    part.parent.mkdir(parents=True)
    parts = {"knob_ptx": tmp_path / "ptx", "knob_blocks": tmp_path / "blocks"}
    spec = SimpleNamespace(kernel="k")

    def recorded(blocks, best, root=None):
        row = {"kernel": "k", "blocks": [{"action": a} for a in blocks], "best": best, "block_root": root}
        part.write_text(json.dumps(row))
        return row

    stale = recorded(["XBLOCK=64"], {"verdict": "faster", "actions": ["XBLOCK=64"]}, "XBLOCK=64")
    assert knob_blocks.measured_without(stale, prior) == "num_warps=2+st_cache_cs"
    assert knob_blocks.v3_winner(spec, tmp_path, parts, "w") is prior
    kept = recorded(["XBLOCK=64", "num_warps=2+st_cache_cs"], {"verdict": "faster",
                                                                "actions": ["num_warps=2", "st_cache_cs"]})
    assert knob_blocks.measured_without(kept, prior) is None
    assert knob_blocks.v3_winner(spec, tmp_path, parts, "w") is prior  # the earlier winner stayed fastest
    recorded(["num_warps=2+st_cache_cs"], {"verdict": "no_difference", "actions": []})
    assert knob_blocks.v3_winner(spec, tmp_path, parts, "w") is None  # beside it, nothing confirmed
    assert knob_blocks.measured_without(stale, None) is None  # no earlier winner: nothing to hold
