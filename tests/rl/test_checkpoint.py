"""Checkpoint save/load: the bad-input audit's reproducers, each now a clear CheckpointError."""

import pytest
import torch

import chronos.rl.checkpoint as ckpt_mod
from chronos.errors import CheckpointError
from chronos.rl.checkpoint import CHECKPOINT_FORMAT, content_hash, load_model, save_checkpoint
from chronos.rl.policy import TransformPolicy, state_shapes


@pytest.fixture
def policy():
    torch.manual_seed(0)
    return TransformPolicy()


def _legacy(path, state, **extra):
    """A file as chronos wrote them before the hash (v1)."""
    torch.save({"format": "chronos-policy-v1", "hidden": 128, "policy": state, "metadata": {}, **extra}, path)


def _fail(path, match, **kw):
    with pytest.raises(CheckpointError, match=match) as e:
        load_model(path, **kw)
    assert str(path) in str(e.value)


def test_state_shapes_are_the_networks():
    for hidden in (1, 32, 128):
        got = {k: tuple(v.shape) for k, v in TransformPolicy(hidden=hidden).state_dict().items()}
        assert got == state_shapes(hidden)


def test_round_trip_stores_and_verifies_a_content_hash(tmp_path, policy):
    path = tmp_path / "p.pt"
    digest = save_checkpoint(path, policy, {"epoch": 3})
    raw = torch.load(path, weights_only=True)
    assert raw["format"] == CHECKPOINT_FORMAT and raw["sha256"] == digest
    assert digest == content_hash(CHECKPOINT_FORMAT, 128, raw["policy"], {"epoch": 3})
    model = load_model(path, require_hash=True)
    assert model.content_hash == digest and model.metadata == {"epoch": 3} and not model.training
    assert all(torch.equal(a, b) for a, b in zip(model.state_dict().values(), policy.state_dict().values(),
                                                  strict=True))


@pytest.mark.parametrize("hidden", [-1, 0, True, 1.5, "128"])
def test_bad_hidden_is_refused_before_building(tmp_path, policy, hidden):
    # audit: hidden=-1 reached TransformPolicy(hidden=-1) and raised a raw RuntimeError
    path = tmp_path / "h.pt"
    _legacy(path, policy.state_dict(), hidden=hidden)
    _fail(path, "hidden must be a positive int")


def test_huge_hidden_is_refused_without_allocating(tmp_path, policy, monkeypatch):
    # audit: hidden=10**6 built TransformPolicy(hidden=10**6) first: a ~4 TB allocation
    path = tmp_path / "huge.pt"
    _legacy(path, policy.state_dict(), hidden=10**6)

    def never(*a, **k):
        raise AssertionError("the network must not be built for a checkpoint that does not fit")

    monkeypatch.setattr(ckpt_mod, "TransformPolicy", never)
    _fail(path, r"do not fit TransformPolicy\(hidden=1000000\).*net.0.weight has shape \(128, 67\)")


@pytest.mark.parametrize("edit, match", [
    (lambda s: s.update({"net.3.weight": s["net.3.weight"].double()}), "net.3.weight is torch.float64"),
    (lambda s: s.update({"net.3.weight": s["net.3.weight"].half()}), "net.3.weight is torch.float16"),
    (lambda s: s.pop("net.6.bias"), r"missing \['net.6.bias'\]"),
    (lambda s: s.update({"extra": torch.zeros(1)}), r"unexpected \['extra'\]"),
    (lambda s: s.update({"net.6.bias": torch.zeros(20)}), r"net.6.bias has shape \(20,\), expected \(21,\)"),
])
def test_every_tensor_is_checked(tmp_path, policy, edit, match):
    state = dict(policy.state_dict())
    edit(state)
    path = tmp_path / "t.pt"
    _legacy(path, state)
    _fail(path, match)


@pytest.mark.parametrize("value", [float("nan"), float("inf"), float("-inf")])
def test_non_finite_weights_are_refused(tmp_path, policy, value):
    # audit: NaN/Inf weights loaded silently (and every prediction was then stop or garbage)
    state = {k: v.clone() for k, v in policy.state_dict().items()}
    state["net.3.bias"][7] = value
    legacy = tmp_path / "legacy.pt"
    _legacy(legacy, state)
    _fail(legacy, "non-finite weights .* net.3.bias", require_hash=False)
    hashed = tmp_path / "hashed.pt"  # a correct hash does not make NaN weights acceptable
    torch.save({"format": CHECKPOINT_FORMAT, "hidden": 128, "policy": state, "metadata": {},
                "sha256": content_hash(CHECKPOINT_FORMAT, 128, state, {})}, hashed)
    _fail(hashed, "non-finite weights")
    policy.load_state_dict(state)
    with pytest.raises(CheckpointError, match="refusing to save non-finite"):
        save_checkpoint(tmp_path / "never.pt", policy)


def test_a_bit_flip_is_caught_by_the_hash(tmp_path, policy):
    # audit: flipping one bit of a weight in the file loaded silently
    path = tmp_path / "p.pt"
    save_checkpoint(path, policy, {"note": "x"})
    raw = bytearray(path.read_bytes())
    at = raw.find(policy.state_dict()["net.3.weight"].numpy().tobytes()[:64])
    assert at > 0
    raw[at + 1000] ^= 0x01  # torch.load does not check the zip's CRCs
    path.write_bytes(raw)
    assert torch.load(path, weights_only=True)["policy"] is not None  # still loads as a torch file
    _fail(path, "content hash mismatch")


def test_edited_metadata_or_hidden_fails_the_hash(tmp_path, policy):
    path = tmp_path / "p.pt"
    save_checkpoint(path, policy, {"epoch": 3})
    raw = torch.load(path, weights_only=True)
    torch.save({**raw, "metadata": {"epoch": 4}}, path)
    _fail(path, "content hash mismatch")


def test_files_without_a_hash(tmp_path, policy):
    legacy = tmp_path / "v1.pt"
    _legacy(legacy, policy.state_dict())
    assert load_model(legacy, require_hash=False).content_hash is None  # opted in: nothing to verify
    _fail(legacy, "no content hash")  # refused by default: a flipped weight could not be told
    seed = tmp_path / "seed.pt"
    torch.save({"policy": TransformPolicy(hidden=64).state_dict()}, seed)
    assert load_model(seed, require_hash=False).hidden == 64
    _fail(seed, "no content hash")
    stripped = tmp_path / "v2.pt"  # a v2 file always carries its hash
    save_checkpoint(stripped, policy)
    raw = torch.load(stripped, weights_only=True)
    del raw["sha256"]
    torch.save(raw, stripped)
    _fail(stripped, "no content hash")


def test_unknown_format_and_bad_metadata(tmp_path, policy):
    path = tmp_path / "f.pt"
    torch.save({"format": "chronos-policy-v9", "hidden": 128, "policy": policy.state_dict()}, path)
    _fail(path, "unknown checkpoint format 'chronos-policy-v9'")
    _legacy(path, policy.state_dict(), metadata=[1, 2])
    _fail(path, "metadata is a list")
    torch.save({"policy": {"net.0.weight": [1.0]}}, path)
    _fail(path, "not a state dict of named tensors")
