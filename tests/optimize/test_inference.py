"""Seed-compatible inference: checkpoints (weights_only only), the seed's examples, and the CLI."""

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
import torch

from chronos.errors import CheckpointError, ChronosError
from chronos.kernels.gemm_tile import gemm_tile_ptx
from chronos.optimize.inference import (
    ACTION_NAMES,
    CHECKPOINT_FORMAT,
    TransformPolicy,
    get_action_history,
    get_action_mask,
    load_model,
    main,
    predict_transforms,
    save_checkpoint,
)
from chronos.ptx import parse
from chronos.rl.decode import greedy_decode

SRC = Path(__file__).resolve().parents[2] / "src"


class Payload:
    """A custom object: pickling it into a checkpoint must make load_model refuse the file."""

    def __reduce__(self):
        return (print, ("this must never run",))


@pytest.fixture
def ckpt(tmp_path):
    torch.manual_seed(0)
    path = tmp_path / "checkpoint_best.pt"
    save_checkpoint(path, TransformPolicy(hidden=128), {"epoch": 3, "note": "untrained test policy",
                                                         "scores": [1.0, 2.5], "cfg": {"beta": 0.01}})
    return path


def test_round_trip_weights_only(ckpt):
    raw = torch.load(ckpt, map_location="cpu", weights_only=True)
    assert raw["format"] == CHECKPOINT_FORMAT and raw["hidden"] == 128 and "policy" in raw and raw["sha256"]
    model = load_model(ckpt)
    assert not model.training
    assert model.metadata == {"epoch": 3, "note": "untrained test policy", "scores": [1.0, 2.5],
                              "cfg": {"beta": 0.01}}
    ref = TransformPolicy()
    ref.load_state_dict(raw["policy"])
    for a, b in zip(ref.state_dict().values(), model.state_dict().values()):
        assert torch.equal(a, b)


def test_other_hidden_size(tmp_path):
    path = tmp_path / "small.pt"
    save_checkpoint(path, TransformPolicy(hidden=32), {})
    assert load_model(path).hidden == 32


def test_seed_style_checkpoint_without_hidden_key(tmp_path):
    path = tmp_path / "seed.pt"
    torch.save({"policy": TransformPolicy(hidden=64).state_dict()}, path)
    assert load_model(path, require_hash=False).hidden == 64  # the seed's files carry no hash: opt in
    with pytest.raises(CheckpointError, match="no content hash"):
        load_model(path)
    assert main(["--checkpoint", str(path), "--allow-unhashed"]) == 0


def test_pickled_object_is_refused(tmp_path, capsys):
    path = tmp_path / "evil.pt"
    torch.save({"policy": TransformPolicy().state_dict(), "extra": Payload()}, path)
    with pytest.raises(CheckpointError, match="weights_only") as e:
        load_model(path)
    assert str(path) in str(e.value)
    assert "must never run" not in capsys.readouterr().out


@pytest.mark.parametrize("content, match", [
    (None, "not found"),
    (b"not a checkpoint at all", "not a readable torch checkpoint"),
    ({"weights": {}}, "expected a dict with a 'policy'"),
    ([1, 2, 3], "expected a dict with a 'policy'"),
    ({"policy": {"net.0.weight": torch.zeros(3, 3)}, "hidden": 128}, "do not fit"),
])
def test_bad_checkpoints(tmp_path, content, match):
    path = tmp_path / "bad.pt"
    if isinstance(content, bytes):
        path.write_bytes(content)
    elif content is not None:
        torch.save(content, path)
    with pytest.raises(CheckpointError, match=match) as e:
        load_model(path)
    assert str(path) in str(e.value)


def test_shape_mismatch(tmp_path):
    path = tmp_path / "mismatch.pt"
    torch.save({"policy": TransformPolicy(hidden=64).state_dict(), "hidden": 128}, path)
    with pytest.raises(CheckpointError, match="do not fit"):
        load_model(path)


def test_metadata_must_be_plain(tmp_path):
    with pytest.raises(CheckpointError, match="metadata"):
        save_checkpoint(tmp_path / "x.pt", TransformPolicy(), {"path": Path("/tmp")})
    with pytest.raises(CheckpointError, match="TorchVersion"):  # a str subclass weights_only refuses
        save_checkpoint(tmp_path / "x.pt", TransformPolicy(), {"torch": torch.__version__})
    with pytest.raises(CheckpointError, match="not a string"):
        save_checkpoint(tmp_path / "x.pt", TransformPolicy(), {"d": {1: "a"}})


def test_predict_transforms(ckpt):
    model = load_model(ckpt)
    actions = predict_transforms(model, gemm_tile_ptx(4, 6, 8))
    assert len(actions) <= 6 and len(set(actions)) == len(actions)
    assert all(a in ACTION_NAMES and a != "stop" for a in actions)
    assert actions == predict_transforms(model, gemm_tile_ptx(4, 6, 8))


def test_predict_on_text_and_module_alike_and_with_ptxas(ckpt, ptxas):
    model = load_model(ckpt)
    text = gemm_tile_ptx(2, 4, 6)
    plain = predict_transforms(model, text)
    assert predict_transforms(model, parse(text)) == plain
    checked = predict_transforms(model, text, ptxas_legality=True)
    assert len(checked) <= 6 and all(a in ACTION_NAMES for a in checked)
    assert predict_transforms(model, text, max_steps=0) == []


@pytest.mark.parametrize("bad, match", [
    (b".version 8.0", r"PTX source text \(str\).*got bytes \(decode it first"),
    (None, "got NoneType"),
    (3, "got int"),
])
def test_predict_refuses_what_is_not_ptx(ckpt, bad, match):
    # audit: bytes/None/int raised a bare AttributeError from deep inside
    with pytest.raises(ChronosError, match=match):
        predict_transforms(load_model(ckpt), bad)


def test_predict_refuses_what_is_not_a_model(ckpt):
    with pytest.raises(ChronosError, match="model must be a TransformPolicy"):
        predict_transforms(str(ckpt), gemm_tile_ptx(2, 2, 2))


class SeedLoop:
    """The seed's Programmatic Usage as a decoder space: fixed features, conflicts-only masks."""

    def __init__(self, features):
        self.features = np.asarray(features, dtype=np.float32)

    def mask(self, key):
        return np.asarray(get_action_mask(key), dtype=np.float32)

    def obs(self, key):
        return np.concatenate([self.features, self.mask(key),
                               np.asarray(get_action_history(key), dtype=np.float32)])

    def child(self, key, action):
        return (*key, action)


def seed_snippet(name):
    """The SEED.md examples, verbatim apart from `chronos.optimize.inference` in place of `inference`."""
    quick = """
        import torch
        from chronos.optimize.inference import load_model , predict_transforms

        # Load model
        model = load_model ( "checkpoint_best.pt" )

        # Predict transforms for a PTX kernel
        with open ( "your_kernel.ptx" ) as f :
            ptx = f . read ( )
        actions = predict_transforms ( model , ptx )
        # -> ['maxnreg_128', 'vec_ld', 'vec_st']
    """
    programmatic = """
        import torch
        from chronos.optimize.inference import TransformPolicy , extract_features_from_ptx , get_action_mask , get_action_history , ACTION_NAMES

        # Load
        model = TransformPolicy ( hidden = 128 )
        ckpt = torch . load ( "checkpoint_best.pt" , map_location = "cpu" , weights_only = False )
        model . load_state_dict ( ckpt [ "policy" ] )
        model . eval ( )

        # Extract features from PTX
        ptx_source = open ( "kernel.ptx" ) . read ( )
        features = extract_features_from_ptx ( ptx_source )

        # Predict step by step
        applied = set ( )
        for step in range ( 6 ) :
            feat_t = torch . tensor ( features , dtype = torch . float32 )
            mask_t = torch . tensor ( get_action_mask ( applied ) , dtype = torch . float32 )
            hist_t = torch . tensor ( get_action_history ( applied ) , dtype = torch . float32 )

            action_id = model . get_greedy_action ( feat_t , mask_t , hist_t )
            action = ACTION_NAMES [ action_id ]
            if action == "stop" :
                break
            print ( f"Step { step + 1 } : apply { action } " )
            applied . add ( action )
    """  # noqa: E501 -- the seed's example, verbatim
    return textwrap.dedent({"quick": quick, "programmatic": programmatic}[name])


def test_seed_quick_start_and_programmatic_usage(ckpt, monkeypatch, capsys):
    monkeypatch.chdir(ckpt.parent)
    ptx = gemm_tile_ptx(4, 6, 8)
    Path("your_kernel.ptx").write_text(ptx)
    Path("kernel.ptx").write_text(ptx)
    ns: dict = {}
    exec(compile(seed_snippet("quick"), "quick_start", "exec"), ns)  # noqa: S102 -- the seed's own example
    assert ns["actions"] == predict_transforms(load_model(ckpt), ptx)
    ns2: dict = {}
    exec(compile(seed_snippet("programmatic"), "programmatic_usage", "exec"), ns2)  # noqa: S102
    # The seed's loop keeps the first features and masks only conflicts: the shared decoder reproduces it
    # when given that loop as its space.
    from chronos.features.seed import extract_features_from_ptx

    expected = greedy_decode([SeedLoop(extract_features_from_ptx(ptx))], load_model(ckpt), 6)[0].sequence
    assert sorted(ns2["applied"]) == sorted(expected)
    out = capsys.readouterr().out
    assert out.count("apply") == len(ns2["applied"])


def test_cli_demo(ckpt, capsys):
    assert main(["--checkpoint", str(ckpt)]) == 0
    out = capsys.readouterr().out
    assert "SYNTHETIC" in out and "sequence:" in out


def test_cli_ptx(ckpt, tmp_path, capsys):
    f = tmp_path / "k.ptx"
    f.write_text(gemm_tile_ptx(2, 4, 6))
    assert main(["--checkpoint", str(ckpt), "--ptx", str(f)]) == 0
    line = capsys.readouterr().out.strip().splitlines()[-1]
    assert line.startswith(f"{f}: ")
    expected = predict_transforms(load_model(ckpt), gemm_tile_ptx(2, 4, 6))
    assert line.split(": ", 1)[1] == (" ".join(expected) or "(no transform: stop)")


@pytest.mark.parametrize("kind", ["malformed_ptx", "bad_checkpoint", "missing_ptx"])
def test_cli_errors_exit_2_one_line(ckpt, tmp_path, kind):
    bad = tmp_path / "bad.ptx"
    bad.write_text(".version 8.0\n.target sm_90\n.visible .entry k(\n{ ld.global.f32 %f1, [%rd1;\n")
    args = {"malformed_ptx": ["--checkpoint", str(ckpt), "--ptx", str(bad)],
            "bad_checkpoint": ["--checkpoint", str(bad)],
            "missing_ptx": ["--checkpoint", str(ckpt), "--ptx", str(tmp_path / "nope.ptx")]}[kind]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(SRC), os.environ.get("PYTHONPATH", "")])}
    r = subprocess.run([sys.executable, "-m", "chronos.optimize.inference", *args], capture_output=True,
                       text=True, env=env, timeout=120, check=False)
    assert r.returncode == 2, r.stderr
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("chronos.optimize.inference: error: "), r.stderr
    assert "Traceback" not in r.stderr
