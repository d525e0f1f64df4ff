"""Recorded training: replayed byte for byte while the inputs equal the record's, trained otherwise."""

from __future__ import annotations

import json

import pytest

from chronos.errors import ChronosError
from chronos.rl.recorded import RecordedTraining, folder_sha256, training_key


def test_replay_copies_only_under_the_same_key(tmp_path):
    out = tmp_path / "trained.bin"
    out.write_bytes(b"weights")
    rec = RecordedTraining(tmp_path / "rec", "stage")
    key = training_key({"lr": 1e-3, "data": "abc"})
    rec.save(key, {"lr": 1e-3}, {"w.bin": out})
    assert rec.replay(training_key({"lr": 2e-3, "data": "abc"}), {"w.bin": tmp_path / "a"}) is None
    assert not (tmp_path / "a").exists()
    meta = rec.replay(key, {"w.bin": tmp_path / "b"})
    assert meta["key"] == key and (tmp_path / "b").read_bytes() == b"weights"
    assert "replayed the recorded training" in rec.describe(meta)


def test_a_changed_recorded_file_is_refused(tmp_path):
    out = tmp_path / "trained.bin"
    out.write_bytes(b"weights")
    rec = RecordedTraining(tmp_path / "rec", "stage")
    rec.save("k", {}, {"w.bin": out})
    (tmp_path / "rec" / "stage" / "w.bin").write_bytes(b"weightz")
    with pytest.raises(ChronosError, match="does not match its sha256.*--retrain --record-training"):
        rec.replay("k", {"w.bin": tmp_path / "b"})
    (tmp_path / "rec" / "stage" / "record.json").write_text("[1]")
    with pytest.raises(ChronosError, match="is not a record"):
        rec.replay("k", {"w.bin": tmp_path / "b"})


def test_folder_digest_follows_names_and_contents(tmp_path):
    (tmp_path / "a.ptx").write_text("x")
    first = folder_sha256(tmp_path)
    (tmp_path / "a.ptx").write_text("y")
    assert folder_sha256(tmp_path) != first
    (tmp_path / "a.ptx").write_text("x")
    assert folder_sha256(tmp_path) == first
    (tmp_path / "junk.txt").write_text("z")
    assert folder_sha256(tmp_path, ("*.ptx",)) == first


def test_a_folder_snakemake_marked_as_an_output_keeps_its_digest(tmp_path):
    """The README's main job leaves data/kernels/gemm_tile/.snakemake_timestamp: grpo's record must still
    match its inputs after it (it did not: the tests run after the main job, in the same clone, failed)."""
    (tmp_path / "a.ptx").write_text("x")
    first = folder_sha256(tmp_path)
    (tmp_path / ".snakemake_timestamp").write_text("")
    assert folder_sha256(tmp_path) == first
    (tmp_path / "b.ptx").write_text("")  # an empty file of content still counts
    assert folder_sha256(tmp_path) != first


def test_the_bc_stage_replays_its_record_and_trains_on_changed_params(tmp_path, capsys):
    from chronos.stages import bc as bc_stage
    from tests.rl.test_bc import synthetic_demos

    (tmp_path / "demos.jsonl").write_text("".join(json.dumps(d) + "\n" for d in synthetic_demos(2, 10)))
    params = tmp_path / "params.yaml"
    params.write_text("bc:\n  epochs: 3\n")

    def run(*extra: str, out: str = "bc.pt") -> int:
        return bc_stage.main(["--params", str(params), "--demos", str(tmp_path / "demos.jsonl"), "--out",
                              str(tmp_path / out), "--stats", str(tmp_path / f"{out}.json"), "--recorded",
                              str(tmp_path / "rec"), *extra])

    assert run("--record-training") == 0 and "replayed" not in capsys.readouterr().out
    (tmp_path / "rec" / "bc" / "bc_stats.json").write_bytes(b"")  # a replay would now be refused...
    assert run(out="again.pt") == 2  # ...and it is: the record is checked before it is copied
    assert "does not match its sha256" in capsys.readouterr().err
    assert run("--retrain", "--record-training") == 0  # train anew and record again
    assert run(out="again.pt") == 0 and "replayed the recorded training" in capsys.readouterr().out
    assert (tmp_path / "again.pt").read_bytes() == (tmp_path / "bc.pt").read_bytes()
    params.write_text("bc:\n  epochs: 4\n")  # another input: trains
    assert run(out="four.pt") == 0 and "replayed" not in capsys.readouterr().out
    assert len(json.loads((tmp_path / "four.pt.json").read_text())["history"]) == 4


def test_committed_records_match_the_committed_outputs():
    """The pipeline's committed policies and reports are the records' files (what `dvc repro` replays)."""
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    pairs = {"bc": {"bc.pt": "models/bc.pt", "bc_stats.json": "reports/bc_stats.json"},
             "grpo": {"checkpoint_best.pt": "models/checkpoint_best.pt",
                      "checkpoint_latest.pt": "models/checkpoint_latest.pt",
                      "training_result.json": "reports/training_result.json",
                      "grpo_curves.csv": "reports/grpo_curves.csv"}}
    for stage, files in pairs.items():
        rec = RecordedTraining(root / "data/recorded_training", stage)
        meta = json.loads((rec.folder / "record.json").read_text())
        for name, committed in files.items():
            assert rec.verified(meta, name).read_bytes() == (root / committed).read_bytes(), committed


def test_committed_records_are_keyed_by_the_committed_inputs():
    """With params.yaml and the committed inputs, `dvc repro` replays (does not retrain) bc and grpo."""
    import argparse
    from pathlib import Path

    from chronos import config
    from chronos.stages import bc, grpo

    root = Path(__file__).resolve().parents[2]
    cfg = config.load(root / "params.yaml")
    b = argparse.Namespace(demos=root / "data/demos/trajectories.jsonl", out=None, stats=None)
    g = argparse.Namespace(kernels=root / "data/kernels/gemm_tile", bc=root / "models/bc.pt", out_best=None,
                           out_latest=None, result=None, curves=None)
    for stage, io in (("bc", bc.training_io(b, cfg)), ("grpo", grpo.training_io(g, cfg))):
        assert RecordedTraining(root / "data/recorded_training", stage).matches(training_key(io[0])), stage


def test_the_committed_heldout_record_is_keyed_by_the_committed_census():
    from pathlib import Path

    from chronos import config
    from chronos.actions import resolve_space
    from chronos.rl.heldout import training_inputs

    root = Path(__file__).resolve().parents[2]
    cfg = config.load(root / "params.yaml")
    families = list(cfg.search.census.families)  # every family has census parts
    inputs = training_inputs(cfg.heldout, resolve_space(cfg.heldout.space), families, root / "data/census",
                             root / "data/kernels")
    assert RecordedTraining(root / "data/recorded_training", "heldout").matches(training_key(inputs))
