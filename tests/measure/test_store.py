"""The store: WAL, append-only, latest wins, dedupe by cubin, the config hash separates."""

from __future__ import annotations

import sqlite3

import pytest

from chronos.measure.config import ConfigError, MeasureConfig
from chronos.measure.store import Record, Store


def rec(**kw) -> Record:
    base = {"kernel": "k", "ptx_sha256": "p1", "cubin_sha256": "c1", "gpu": "G", "driver": "d", "ptxas": "13.0.88",
            "config_hash": "h1", "actions": ("vec_ld",), "valid": True, "cycles_median": 100.0}
    base.update(kw)
    return Record(**base)


def test_wal_and_append_only(tmp_path):
    s = Store(tmp_path / "m.sqlite")
    assert s.journal_mode() == "wal"
    s.insert(rec())
    with pytest.raises(sqlite3.DatabaseError, match="append-only"):
        s.db.execute("UPDATE measurements SET valid = 0")
    with pytest.raises(sqlite3.DatabaseError, match="append-only"):
        s.db.execute("DELETE FROM measurements")


def test_latest_wins_and_round_trip(tmp_path):
    s = Store(tmp_path / "m.sqlite")
    s.insert(rec(cycles_median=100.0))
    s.insert(rec(cycles_median=90.0, extra={"n": 3}))
    got = s.latest("k", "p1", "h1")
    assert got.cycles_median == 90.0 and got.actions == ("vec_ld",) and got.extra == {"n": 3} and got.valid
    s.close()
    again = Store(tmp_path / "m.sqlite").latest("k", "p1", "h1")  # persisted
    assert again.cycles_median == 90.0


def test_config_hash_gpu_and_ptxas_separate(tmp_path):
    s = Store(tmp_path / "m.sqlite")
    s.insert(rec())
    assert s.latest("k", "p1", "h2") is None
    assert s.latest("k", "p1", "h1", gpu="Other") is None
    assert s.latest("k", "p1", "h1", ptxas="12.8") is None
    assert s.latest("k", "p1", "h1", gpu="G", ptxas="13.0.88") is not None


def test_dedupe_by_cubin(tmp_path):
    s = Store(tmp_path / "m.sqlite")
    first = s.insert(rec(ptx_sha256="pA", cubin_sha256="same"))
    assert s.latest_by_cubin("same", "h1").id == first.id
    assert s.latest_by_cubin("same", "h1", kernel="other") is None
    assert s.latest_by_cubin("same", "h2") is None


def test_config_hash_stable_and_operational_keys_ignored():
    a, b = MeasureConfig(), MeasureConfig()
    assert a.config_hash() == b.config_hash() and len(a.config_hash()) == 16
    assert MeasureConfig(reps=7).config_hash() != a.config_hash()
    assert MeasureConfig(watchdog_s=5, gpus=2).config_hash() == a.config_hash()
    assert MeasureConfig.from_params({"backend": "gpu", "reps": 7}) == MeasureConfig(reps=7)
    with pytest.raises(ConfigError, match="unknown keys"):
        MeasureConfig.from_params({"repz": 3})
    with pytest.raises(ConfigError):
        MeasureConfig(input_draws=1)
