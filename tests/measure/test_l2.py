"""chronos.measure.l2: the demote kernel assembles for both targets and covers every line of a buffer; the
timing knob that turns it on keys comparisons only when on. The probe kernels of
experiments/measurement/l2_demote.py assemble too (the benchmark runs on a GPU only)."""

from __future__ import annotations

import dataclasses

import pytest

from chronos.config import TimingConfig
from chronos.errors import ConfigError
from chronos.measure import l2
from tests.benchmark_module import ROOT, load_script


def _bench():
    return load_script("experiments/measurement/l2_demote.py")


@pytest.mark.parametrize("arch", ["sm_89", "sm_90a"])
def test_demote_and_probe_kernels_assemble(ptxas, arch):
    from chronos.toolchain import assemble

    bench = _bench()
    for ptx in (l2.DEMOTE_PTX, bench.PROBE_NORMAL_PTX, bench.PROBE_LAST_PTX):
        assert assemble(ptx, arch, ptxas=ptxas).cubin
    assert "applypriority.global.L2::evict_normal" in l2.DEMOTE_PTX
    assert "L2::cache_hint" in bench.PROBE_LAST_PTX and "L2::cache_hint" not in bench.PROBE_NORMAL_PTX


@pytest.mark.parametrize("nbytes", [1, 128, 129, 256, 255 * 128, 256 * 128, 256 * 128 + 1, 3 << 30])
def test_the_grid_gives_every_line_one_thread(nbytes):
    lines = l2.lines_of(nbytes)
    assert (lines - 1) * l2.LINE_BYTES < nbytes <= lines * l2.LINE_BYTES
    ctas = l2.grid_of(nbytes)[0]
    assert (ctas - 1) * l2.BLOCK < lines <= ctas * l2.BLOCK


def test_the_demote_knob_keys_comparisons_only_when_on():
    base = TimingConfig()
    assert not base.l2_demote
    on = dataclasses.replace(base, l2_demote=True)
    assert base.timing_hash("m") != on.timing_hash("m")
    # off, the keys are the ones stored comparisons were made under before the knob existed (golden)
    assert base.timing_hash("m") == "4c0141ed5c99b9b2"
    assert TimingConfig(max_rounds=0).timing_hash("m") == "946605b29c7ae137"
    with pytest.raises(ConfigError, match="timing.l2_demote"):
        TimingConfig(l2="warm", l2_demote=True)


def test_census_winners_put_l2_evict_last_first(tmp_path):
    import json

    bench = _bench()
    rows = [("k1", ["l2_evict_last_reread"], 0.95), ("k2", ["st_l1_evict_first"], 0.90),
            ("k3", ["occ_ctas_2"], 0.97), ("k4", [], 1.0)]
    for kernel, acts, ratio in rows:
        best = {"actions": acts, "ratio": ratio, "verdict": "faster" if acts else "no_difference"}
        (tmp_path / f"{kernel}.json").write_text(json.dumps({"kernel": kernel, "best": best}))
    got = bench.winners(tmp_path, controls=1)
    assert [(f, k) for f, k, _, _ in got] == [("l2_evict_last", "k1"), ("other", "k2")]


def test_the_benchmarks_on_comparison_is_the_census_one_and_off_keys_its_own():
    """The census is timed with the demote (search.census.l2_demote), so on replay the benchmark's demote-on
    comparison of a census winner is the census's own (same PTX, same key), and its demote-off one is
    another key: the census of 6cad088, measured before the demote, still in the store."""
    from chronos import config
    from chronos.search.atlas_replay import backend_with_atlas
    from chronos.search.runs import kernels_of

    root = ROOT
    bench = _bench()
    cfg = config.load(root / "params.yaml")
    assert cfg.search.census.l2_demote
    first = bench.winners(root / "data" / "census", controls=0)[0]
    assert first[0] == "l2_evict_last"
    families = cfg.search.census.families
    specs = {s.kernel: (sj, s) for _, sj, s in kernels_of(root / "data" / "kernels", families)}
    backend = backend_with_atlas("replay", root / "data" / "store" / "measurements.sqlite", cfg.measure)
    try:
        row = bench.compare_twice([first], specs, backend, cfg)[0]
    finally:
        backend.close()
    assert row["on"]["ratio"] == first[3] and row["on"]["verdict"] == "faster"
    assert row["off"]["ratio"] != first[3]
