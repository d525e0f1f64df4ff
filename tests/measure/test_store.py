"""The store: WAL, append-only, latest wins, dedupe by cubin, the config hash separates."""

from __future__ import annotations

import sqlite3
import time

import pytest

from chronos.config import MeasureConfig
from chronos.errors import ConfigError, StoreError
from chronos.measure.store import Record, Store, now_stamp


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


# Row checksums (schema 2): a changed value that still decodes is an error naming the file and row.

def _flip_time(path, table: str, sql: str) -> None:
    raw = sqlite3.connect(path)
    raw.execute(f"DROP TRIGGER IF EXISTS {'no_update' if table == 'measurements' else 'no_update_cmp'}")
    with raw:
        raw.execute(sql)
    raw.close()


def test_a_changed_time_fails_its_row_checksum(tmp_path):
    path = tmp_path / "m.sqlite"
    s = Store(path)
    s.insert(rec(time_ms_median=0.00584))
    s.insert(rec(ptx_sha256="p2", time_ms_median=0.00584))
    s.close()
    _flip_time(path, "measurements", "UPDATE measurements SET time_ms_median = 0.00486 WHERE id = 2")
    s = Store(path, readonly=True)
    assert s.latest("k", "p1", "h1").time_ms_median == 0.00584  # the untouched row still reads
    with pytest.raises(StoreError, match=f"measurement store {path}: measurements row 2 fails its checksum"):
        s.latest("k", "p2", "h1")
    with pytest.raises(StoreError, match="row 2 fails its checksum"):
        s.all()


def test_a_changed_comparison_body_fails_its_checksum(tmp_path):
    path = tmp_path / "m.sqlite"
    s = Store(path)
    prov = {"gpu": "G", "driver": "d", "ptxas": "13.0.88"}
    s.insert_comparison("k", "ck", "th", prov, {"event_ms": [0.0123]})
    assert s.latest_comparison("k", "ck", "th")[0] == {"event_ms": [0.0123]}
    s.close()
    _flip_time(path, "comparisons", "UPDATE comparisons SET body = '{\"event_ms\": [0.0133]}'")
    with pytest.raises(StoreError, match=f"{path}: comparisons row 1 fails its checksum"):
        Store(path, readonly=True).latest_comparison("k", "ck", "th")


def test_a_comparison_is_answered_as_the_store_stood_at_a_time(tmp_path):
    s = Store(tmp_path / "m.sqlite")
    prov = {"gpu": "G", "driver": "d", "ptxas": "13.0.88"}
    first = s.insert_comparison("k", "ck", "th", prov, {"event_ms": [0.0123]})
    time.sleep(0.002)  # stamps have microseconds: the two differ
    later = s.insert_comparison("k", "ck", "th", prov, {"event_ms": [0.0456]})  # another stage, same key
    assert first < later <= now_stamp()
    assert s.latest_comparison("k", "ck", "th")[0] == {"event_ms": [0.0456]}  # the newest by default
    got = s.latest_comparison("k", "ck", "th", not_after=first)
    assert got[0] == {"event_ms": [0.0123]} and got[1]["created_at"] == first
    assert s.latest_comparison("k", "ck", "th", not_after="2000-01-01T00:00:00.000000Z") is None


def test_values_round_trip_through_their_checksum(tmp_path):
    s = Store(tmp_path / "m.sqlite")
    s.insert(rec(cycles_median=100, time_ms_median=float("nan"), registers=32.0, valid=1, extra={"x": 1.5}))
    got = s.latest("k", "p1", "h1")  # an int in a REAL column, NaN, a float in an INTEGER column
    assert got.cycles_median == 100.0 and got.time_ms_median is None and got.registers == 32


def _schema1_store(path) -> None:
    from chronos.measure.store import SCHEMA
    old = SCHEMA.replace(",\n    row_sha256 TEXT NOT NULL", "")
    assert "row_sha256" not in old
    raw = sqlite3.connect(path)
    raw.executescript(old)
    raw.execute("INSERT INTO measurements (kernel, ptx_sha256, cubin_sha256, gpu, driver, ptxas, "
                "config_hash, actions, cycles_median, valid, created_at) VALUES ('k', 'p1', 'c1', 'G', 'd', "
                "'13.0.88', 'h1', '[\"vec_ld\"]', 100.0, 1, 't')")
    raw.execute("INSERT INTO comparisons (kernel, contenders_key, timing_hash, gpu, driver, ptxas, body, "
                "created_at) VALUES ('k', 'ck', 'th', 'G', 'd', 'x', '{}', 't')")
    raw.commit()
    raw.close()


def test_a_schema_1_store_is_refused_with_the_command_that_upgrades_it(tmp_path, capsys):
    from chronos.measure.store_upgrade import main

    path = tmp_path / "m.sqlite"
    _schema1_store(path)
    for readonly in (True, False):
        with pytest.raises(StoreError, match=f"{path} has schema 1.*store_upgrade {path}"):
            Store(path, readonly=readonly)
    assert main([str(path)]) == 0
    assert "1 measurements and 1 comparisons sealed" in capsys.readouterr().out
    s = Store(path, readonly=True)
    got = s.latest("k", "p1", "h1")
    assert got.id == 1 and got.cycles_median == 100.0 and s.latest_comparison("k", "ck", "th")[0] == {}
    s.close()
    assert main([str(path)]) == 1 and "already has schema 2" in capsys.readouterr().err


def test_reading_a_closed_store_leaves_no_files_beside_it(tmp_path):
    path = tmp_path / "m.sqlite"
    _store_with(path, 2)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m.sqlite"]  # back in rollback-journal mode
    s = Store(path, readonly=True)
    assert len(s.all()) == 2
    s.close()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m.sqlite"]


def test_committed_stores_are_sealed():
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    for rel in ("data/store/measurements.sqlite", "data/library/attorch/measurements.sqlite"):
        s = Store(root / rel, readonly=True)
        assert s.all() or rel.startswith("data/library")  # every row verified
        s.close()


def test_upgrading_a_missing_store_says_so(tmp_path, capsys):
    from chronos.measure.store_upgrade import main

    assert main([str(tmp_path / "nope.sqlite")]) == 1
    assert f"measurement store {tmp_path / 'nope.sqlite'}: no such file" in capsys.readouterr().err
    assert not (tmp_path / "nope.sqlite").exists()  # nothing created in its place
