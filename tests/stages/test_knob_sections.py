"""The knob stages' shared shell (chronos.stages.knob_sections): what a per-kernel result says of a
workload's Triton GPU time."""

from __future__ import annotations

import json

import pytest

from chronos.kernels.profile import measured_gpu_ms
from chronos.stages.knob_sections import time_shares


def test_the_triton_time_speedup_applies_each_measured_winner_to_its_share_of_the_time(tmp_path):
    (tmp_path / "tune-parts").mkdir()
    (tmp_path / "capture.json").write_text(json.dumps({"per_kernel": [
        {"kernel": "a", "launches": 10}, {"kernel": "b", "launches": 1}, {"kernel": "c", "launches": 2}]}))
    for k, ms in (("a", 0.5), ("b", 3.0), ("c", 1.0)):  # a: 5 ms of GPU time, b: 3, c: 2 (10 in all)
        (tmp_path / "tune-parts" / f"{k}.json").write_text(json.dumps({"kernel": k, "baseline_ms": ms}))
    rows = [{"kernel": "a", "speedup": 1.25, "best": {}}, {"kernel": "b", "speedup": 1.0, "best": {}},
            {"kernel": "c", "error": "not_measured (budget)"}]
    got = time_shares(measured_gpu_ms(tmp_path), rows)
    assert got["selected_time_share"] == 1.0 and got["measured_time_share"] == 0.8
    assert got["triton_time_speedup"] == pytest.approx(10 / (10 - 5 * (1 - 1 / 1.25)))  # 10 / 9
    assert time_shares(measured_gpu_ms(tmp_path / "absent"), rows)["triton_time_speedup"] is None


def test_selected_by_measured_time_the_budget_goes_to_the_largest_shares_of_every_workload_first():
    from pathlib import Path
    from types import SimpleNamespace

    from chronos.stages.knob_sections import measuring_order

    kernels = Path(__file__).resolve().parents[2] / "data" / "kernels"
    families = ["captured/llama", "captured/flex"]
    heaviest = SimpleNamespace(families=families, per_family=4, select="measured_time", once_per="entry")
    weights = {f: measured_gpu_ms(kernels / f) for f in families}
    by_share = measuring_order(kernels, heaviest, weights)
    assert {f for f, _ in by_share} == set(families) and len(by_share) == 8
    assert by_share[0][0] == "captured/flex"  # one flex template carries more of flex than any llama kernel
    shares = [time_shares(weights[f], [{"kernel": item[1].kernel, "best": {}, "speedup": 1.0}])
              ["measured_time_share"] for f, item in by_share]
    assert shares == sorted(shares, reverse=True)
    by_profile = SimpleNamespace(families=families, per_family=4, select="profile", once_per="entry")
    in_order = measuring_order(kernels, by_profile, weights)
    assert [f for f, _ in in_order] == ["captured/llama"] * 4 + ["captured/flex"] * 4
    both = SimpleNamespace(families=families, per_family=4, select="profile+measured_time", once_per="entry")
    merged = measuring_order(kernels, both, weights)
    assert {item[1].kernel for _, item in in_order} < {item[1].kernel for _, item in merged}
    shares = [weights[f].get(item[1].kernel, 0.0) / sum(weights[f].values()) for f, item in merged]
    assert shares == sorted(shares, reverse=True)  # the heaviest added kernels are measured first


def test_a_part_records_when_it_was_recorded_and_replay_answers_as_the_store_stood_then(tmp_path):
    from types import SimpleNamespace

    from chronos.measure.store import now_stamp
    from chronos.search.knob_census import census_family
    from chronos.stages.knob_sections import pin_part

    spec = SimpleNamespace(kernel="k")
    row = {"kernel": "k", "best": {"actions": ["a"], "verdict": "faster"}, "speedup": 1.1}
    before = now_stamp()
    census_family("f", [(0, spec)], lambda s: dict(row), tmp_path, replay=False, out_of_budget=lambda: False,
                  provenance=lambda: {"gpu": "G"})
    prov = json.loads((tmp_path / "f" / "k.json").read_text())["provenance"]
    assert prov["gpu"] == "G" and before <= prov["recorded_at"] <= now_stamp()
    backend, pinned = SimpleNamespace(gpu=None, not_after=None), []
    got = census_family("f", [(0, spec)], lambda s: dict(row), tmp_path, replay=True,
                        out_of_budget=lambda: False, provenance=dict,
                        pin=lambda p: (pinned.append(p), pin_part(backend, p)))
    assert pinned == [prov] and (backend.gpu, backend.not_after) == ("G", prov["recorded_at"])
    assert got[0]["as_recorded"] is True


def _part(tmp_path, family: str, kernel: str, **row) -> None:
    path = tmp_path / family / f"{kernel}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"kernel": kernel, **row}))


def test_a_part_measured_with_another_ptxas_or_on_another_root_is_stale(tmp_path):
    from types import SimpleNamespace

    from chronos.stages.knob_sections import staleness

    folder = tmp_path / "kernels" / "w"
    folder.mkdir(parents=True)
    ptxas = {"path": "/triton/bin/ptxas", "version": "12.8.93"}
    (folder / "triton.json").write_text(json.dumps({"k": {"hash": "h", "name": "k", "stock_ptx": "p",
                                                          "ptxas": ptxas}}))
    _part(tmp_path / "census", "w", "k", best={"actions": ["maxnreg=64"], "verdict": "faster"})
    args = SimpleNamespace(section="knob_ptx", knob_parts=tmp_path / "census")
    stale, spec = staleness(args, folder, "w", None), SimpleNamespace(kernel="k")
    assert stale(spec, {"root": "maxnreg=64", "provenance": {"ptxas": "12.8.93"}}) is None
    assert "ptxas 13.0.88; its capture's Triton assembles it with 12.8.93" in stale(
        spec, {"root": "maxnreg=64", "provenance": {"ptxas": "13.0.88"}})
    assert "measured on stock; the census's winner is now maxnreg=64" in stale(
        spec, {"root": None, "provenance": {"ptxas": "12.8.93"}})
    (folder / "triton.json").write_text(json.dumps({"k": {"hash": "h", "name": "k", "stock_ptx": "p"}}))
    recorded = {"root": "maxnreg=64", "provenance": {"ptxas": "13.0.88"}}
    assert staleness(args, folder, "w", None)(spec, recorded) is None  # no ptxas recorded: nothing to hold to


def test_a_walk_judged_beside_another_earlier_winner_than_now_is_stale(tmp_path, monkeypatch):
    """A walk's part records the earlier stages' winner it was judged beside (`prior`); once a later knob_ptx
    or knob_blocks part changes that winner, the part's comparisons no longer answer the lineup replay
    builds (2026-12-07e: six such parts failed replay with "no side-by-side comparison"): it is stale."""
    from types import SimpleNamespace

    from chronos.stages import knob_sections

    now = {"k": SimpleNamespace(actions=("XBLOCK=1,num_warps=8", "occ_ctas_6")), "s": None}
    seen = []

    def v3_winner(spec, folder, parts, family):
        seen.append(parts)
        return now[spec.kernel]

    monkeypatch.setattr(knob_sections, "v3_winner", v3_winner)
    args = SimpleNamespace(section="knob_walk", joint_parts=tmp_path / "ptx",
                           blocks_parts=tmp_path / "blocks")
    stale = knob_sections.staleness(args, tmp_path, "w", knob_sections.earlier_winners(args))
    k, s = SimpleNamespace(kernel="k"), SimpleNamespace(kernel="s")
    assert stale(k, {"prior": ["XBLOCK=1,num_warps=8", "occ_ctas_6"]}) is None
    assert stale(k, {"prior": None}) == ("walked beside the earlier stages' winner stock, which is now "
                                         "XBLOCK=1,num_warps=8+occ_ctas_6")
    assert stale(s, {"prior": None}) is None
    assert "which is now stock" in stale(s, {"prior": ["l2_evict_last_streaming"]})
    assert stale(k, {"best": {}}) is None  # a part from before walks recorded their prior: as recorded
    assert seen[0] == {"knob_ptx": tmp_path / "ptx", "knob_blocks": tmp_path / "blocks"}
    assert len(seen) == 2  # each kernel's winner rebuilt once in the run, however often it is asked for


def test_a_stale_part_is_measured_again_on_a_gpu_and_named_in_replay(tmp_path):
    from types import SimpleNamespace

    from chronos.search.knob_census import census_family

    spec = SimpleNamespace(kernel="k")
    _part(tmp_path, "f", "k", best={"actions": ["old"], "verdict": "faster"}, speedup=1.1)
    new = {"kernel": "k", "best": {"actions": ["new"], "verdict": "faster"}, "speedup": 1.2}
    def stale(s, recorded):
        return "measured on old" if recorded["best"]["actions"] == ["old"] else None
    run = {"out_of_budget": lambda: False, "provenance": lambda: {"gpu": "G"}, "stale": stale}
    got = census_family("f", [(0, spec)], lambda s: dict(new), tmp_path, False, **run)
    assert got[0]["best"]["actions"] == ["new"] and "from_part" not in got[0]
    assert json.loads((tmp_path / "f" / "k.json").read_text())["best"]["actions"] == ["new"]  # rewritten
    assert census_family("f", [(0, spec)], lambda s: 1 / 0, tmp_path, False, **run)[0]["from_part"]
    _part(tmp_path, "f", "k", best={"actions": ["old"], "verdict": "faster"}, speedup=1.1)
    got = census_family("f", [(0, spec)], lambda s: dict(new), tmp_path, True, **run)
    assert got[0]["error"] == ("stale part: measured on old (run this stage on a GPU: it measures the kernel "
                               "again)")


def test_the_family_is_timed_with_the_ptxas_its_capture_deploys_with(tmp_path, monkeypatch):
    from chronos.errors import ChronosError
    from chronos.stages import knob_sections

    folder = tmp_path / "w"
    folder.mkdir()
    assert knob_sections.deploying_ptxas(folder, "/default/ptxas") == ("/default/ptxas", None)
    recorded = {"path": "/t/ptxas", "version": "12.8.93"}
    (folder / "triton.json").write_text(json.dumps({"k": {"hash": "h", "name": "k", "stock_ptx": "p",
                                                          "ptxas": recorded}}))
    monkeypatch.setattr(knob_sections, "deploy_ptxas", lambda d: "/t/ptxas")
    monkeypatch.setattr(knob_sections, "ptxas_version", lambda p: "12.8.93")
    assert knob_sections.deploying_ptxas(folder, "/default/ptxas") == ("/t/ptxas", None)
    monkeypatch.setattr(knob_sections, "ptxas_version", lambda p: "13.0.88")
    path, why = knob_sections.deploying_ptxas(folder, "/default/ptxas")
    assert path == "/default/ptxas" and "deploy with ptxas 12.8.93 (/t/ptxas)" in why and "13.0.88" in why
    def absent(d):
        raise ChronosError("no ptxas here emits ISA 8.7")
    monkeypatch.setattr(knob_sections, "deploy_ptxas", absent)
    assert "no ptxas here emits ISA 8.7" in knob_sections.deploying_ptxas(folder, "/default/ptxas")[1]
    with pytest.raises(ChronosError, match="deploy with ptxas 12.8.93"):
        knob_sections.refusing(why)(None)


def test_a_kernel_knob_ptx_has_not_measured_waits_for_it_and_is_not_counted_as_stock_kept(tmp_path):
    from pathlib import Path
    from types import SimpleNamespace

    from chronos.search.knob_blocks import NOTHING_TO_TRY
    from chronos.search.runs import kernels_of
    from chronos.stages.knob_sections import settler

    kernels = Path(__file__).resolve().parents[2] / "data" / "kernels"
    family = "captured/flex_decode_long"
    spec = next(s for _, _, s in kernels_of(kernels, [family]) if "flex_attention_1_29498833" in s.kernel)
    for section in ("knob_blocks", "knob_walk"):
        args = SimpleNamespace(section=section, joint_parts=tmp_path)
        row = settler(args, kernels / family, family)(spec)
        assert row is not None and row["error"].startswith("not_measured: knob_ptx has not measured it")
    (tmp_path / family).mkdir(parents=True)  # knob_ptx measured it and nothing won: no earlier winner
    (tmp_path / family / f"{spec.kernel}.json").write_text(json.dumps(
        {"kernel": spec.kernel, "best": {"actions": [], "verdict": "none"}, "speedup": 1.0}))
    args = SimpleNamespace(section="knob_blocks", joint_parts=tmp_path)
    assert settler(args, kernels / family, family)(spec)["error"] == NOTHING_TO_TRY
    walk = SimpleNamespace(section="knob_walk", joint_parts=tmp_path)
    assert settler(walk, kernels / family, family)(spec) is None  # the walk measures it


def test_knob_shapes_judges_only_the_shapes_that_share_a_variant_and_says_so_of_the_rest(tmp_path):
    """Stage knob_shapes on gpt2's committed parts: a shape of a PTX whose winners differ is measured beside
    its own winner (its part names the variant it judged), any other kernel is settled with why; a part that
    judged another variant than the one standing now is stale."""
    import shutil
    from pathlib import Path
    from types import SimpleNamespace

    from chronos.kernels.spec import load_specs
    from chronos.stages import knob_sections
    from chronos.tuning.shapes import NOT_SHARED

    from ..search.stub_backend import StubBackend

    root = Path(__file__).resolve().parents[2] / "data"
    family = "captured/gpt2"
    shutil.copytree(root / "kernels" / family, tmp_path / "kernels" / family,
                    ignore=shutil.ignore_patterns("tune-parts", "ttir", "inputs"))
    args = SimpleNamespace(section="knob_shapes", kernels=tmp_path / "kernels", joint_parts=root / "knob_ptx",
                           blocks_parts=root / "knob_blocks", walk_parts=root / "knob_walk")
    args.shape_plan = knob_sections.shape_plan(args, tmp_path / "knob_shapes")
    folder = tmp_path / "kernels" / family
    specs = {s.kernel: s for s in load_specs(folder / "specs.json")}
    variants = args.shape_plan(family)[0]
    shared = sorted(k for k in variants if "cat_split_transpose_view_1_26c644b6" in k)
    other = next(k for k in specs if k not in variants)
    settled = knob_sections.settler(args, folder, family)
    assert settled(specs[other]) == {"kernel": other, "error": NOT_SHARED}
    assert settled(specs[shared[0]]) is None
    label = variants[shared[0]]
    measure = knob_sections.measurer(args, folder, family, StubBackend({label: 0.5}), None, 0.01, {}, None)
    row = measure(specs[shared[0]])
    assert row["confirms"] == label and row["best"]["actions"] == label.split("+")
    stale = knob_sections.staleness(args, folder, family, None)
    assert stale(specs[shared[0]], row) is None
    assert "the variant for its shapes is now " + label in stale(specs[shared[0]], {**row, "confirms": "x"})


def test_knob_shapes_and_a_repeat_time_again_what_the_store_has_compared_and_replay_is_left_alone():
    """A shape whose own winner is the shared variant has [stock, variant] in the store already (its own
    stage's confirming run): served from there, knob_shapes would judge nothing again (2026-12-07, llama)."""
    from types import SimpleNamespace

    from chronos.measure.backend import ReplayBackend
    from chronos.stages.knob_sections import measuring_anew

    def gpu():
        return SimpleNamespace(remeasure=False)

    def args(section, remeasure=False):
        return SimpleNamespace(section=section, remeasure=remeasure)

    assert measuring_anew(gpu(), args("knob_shapes")).remeasure is True
    assert measuring_anew(gpu(), args("knob_walk", remeasure=True)).remeasure is True
    assert measuring_anew(gpu(), args("knob_walk")).remeasure is False
    replay = ReplayBackend.__new__(ReplayBackend)  # no store needed: only its type is asked
    assert getattr(measuring_anew(replay, args("knob_shapes")), "remeasure", False) is False
