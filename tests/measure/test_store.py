"""The store: WAL, append-only, latest wins, dedupe by cubin, the config hash separates."""

from __future__ import annotations

import sqlite3

import pytest

from chronos.config import MeasureConfig
from chronos.errors import ConfigError, StoreError
from chronos.measure.store import Record, Store


def rec(**kw) -> Record:
    base = {"kernel": "k", "ptx_sha256": "p1", "cubin_sha256": "c1", "gpu": "G", "driver": "d",
            "ptxas": "13.0.88", "config_hash": "h1", "actions": ("vec_ld",), "valid": True,
            "cycles_median": 100.0}
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
    assert MeasureConfig(backend="gpu", reps=7).config_hash() == MeasureConfig(reps=7).config_hash()
    with pytest.raises(ConfigError):
        MeasureConfig(input_draws=1)


# Bad input (audit reproducers): a damaged, truncated or empty store file is a StoreError naming the file,
# never a raw sqlite3 traceback nor silently altered rows, and replay (read-only) writes nothing into it.

def _store_with(path, n: int, **kw) -> None:
    s = Store(path)
    for i in range(n):
        s.insert(rec(ptx_sha256=f"p{i}", **kw))
    s.close()  # the last connection checkpoints the WAL into the file


def _varint(buf: bytes, at: int) -> tuple[int, int]:
    """SQLite varint at `at` (up to 8 bytes of 7 bits here): (value, offset after it)."""
    v = 0
    for i in range(8):
        b = buf[at + i]
        v = v << 7 | b & 0x7F
        if b < 0x80:
            return v, at + i + 1
    raise AssertionError("long varint")


def test_replay_of_an_empty_file_writes_nothing_into_it(tmp_path):
    from chronos.measure.backend import ReplayBackend

    empty = tmp_path / "m.sqlite"
    empty.write_bytes(b"")
    with pytest.raises(StoreError, match=f"{empty}.*no table 'measurements'"):
        Store(empty, readonly=True)
    with pytest.raises(StoreError, match=str(empty)):
        ReplayBackend(empty)
    assert empty.read_bytes() == b""  # it used to get the schema written into it


def test_a_flipped_bit_met_while_reading_rows_is_a_store_error(tmp_path):
    path = tmp_path / "m.sqlite"
    _store_with(path, 1, log="L" * 40)
    data = bytearray(path.read_bytes())
    data[data.index(b"L" * 40)] |= 0x80  # no longer UTF-8; quick_check does not look inside values
    path.write_bytes(bytes(data))
    with sqlite3.connect(path) as raw, pytest.raises(sqlite3.OperationalError):
        raw.execute("SELECT log FROM measurements").fetchall()  # what escaped as a traceback
    s = Store(path, readonly=True)
    with pytest.raises(StoreError, match=f"cannot read measurement store {path}.*UTF-8"):
        s.all()
    s.close()


def test_quick_check_refuses_a_damaged_btree_that_reads_back_altered_rows(tmp_path):
    path = tmp_path / "m.sqlite"
    _store_with(path, 3)
    with sqlite3.connect(path) as raw:
        root = raw.execute("SELECT rootpage FROM sqlite_master WHERE name = 'measurements'").fetchone()[0]
        page_size = raw.execute("PRAGMA page_size").fetchone()[0]
    data = bytearray(path.read_bytes())
    page = (root - 1) * page_size
    assert data[page] == 0x0D  # a table leaf: 3 small rows fit in the root page
    cell = int.from_bytes(data[page + 8 + 2: page + 8 + 4], "big")  # the second cell: rowid 2
    _, at = _varint(data, page + cell)  # past the payload size, at the rowid
    assert data[at] == 2
    data[at] ^= 0x02  # rowid 2 -> 0, out of key order
    path.write_bytes(bytes(data))
    with sqlite3.connect(path) as raw:  # plain SQLite reads it back without a word
        assert [r[0] for r in raw.execute("SELECT id, log FROM measurements")] == [1, 0, 3]
    for readonly in (True, False):
        with pytest.raises(StoreError, match=f"measurement store {path} is damaged.*quick_check"):
            Store(path, readonly=readonly)


def test_a_truncated_store_is_a_store_error(tmp_path):
    path = tmp_path / "m.sqlite"
    _store_with(path, 200, log="x" * 500)
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])
    with pytest.raises(StoreError, match=str(path)):
        Store(path, readonly=True).all()
