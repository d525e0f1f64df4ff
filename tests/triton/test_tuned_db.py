"""The tuned DB: append-only, strict keys, newest row wins, errors name the file. Needs no Triton."""

from __future__ import annotations

import sqlite3
import traceback
from dataclasses import replace
from pathlib import Path

import pytest

from chronos import __version__
from chronos.triton.tuned_db import (
    ACTION_SPACE,
    TunedDB,
    TunedDBError,
    TunedKey,
    make_key,
    ptx_identity_sha256,
    show,
)

PTX = """//
.version 8.7
.target sm_90a
.address_size 64

.visible .entry k(
	.param .u64 .ptr .global .align 1 k_param_0
)
.reqntid 128
{
	ret;
}
"""
TUNED = PTX.replace(".reqntid 128\n", ".reqntid 128\n.maxnreg 64\n")
VERIFIED = {"bit_exact": True, "draws": 3}


def key(**kw) -> TunedKey:
    base = make_key("h" * 64, PTX, "k", gpu="NVIDIA H200", driver="580.95.05 (CUDA 13.0)", ptxas="12.8.93")
    return replace(base, **kw)


def put(db: TunedDB, k: TunedKey | None = None, ptx: str = TUNED, ratio: float = 0.8, **kw):
    return db.put(k or key(), kw.pop("actions", ["maxnreg_64"]), ptx, ratio, kw.pop("ci", (0.75, 0.85)),
                  kw.pop("verification", VERIFIED), kw.pop("provenance", {"run": "test"}))


def test_roundtrip_and_versions_in_the_key(tmp_path):
    k = key()
    assert (k.chronos_version, k.action_space) == (__version__, ACTION_SPACE)
    with TunedDB(tmp_path / "t.sqlite") as db:
        put(db)
        e = db.get(k)
    assert (e.actions, e.ptx, e.ratio, e.ci, e.verification) == (("maxnreg_64",), TUNED, 0.8, (0.75, 0.85),
                                                                  VERIFIED)
    assert e.key == k and e.provenance == {"run": "test"} and e.created_at.endswith("Z")


def test_newest_row_wins_and_every_field_is_in_the_key(tmp_path):
    with TunedDB(tmp_path / "t.sqlite") as db:
        put(db, ratio=0.9)
        put(db, ratio=0.7, ci=(0.6, 0.8))
        assert db.get(key()).ratio == 0.7
        assert [e.ratio for e in db.entries()] == [0.7]
        for field, other in [("chronos_version", "0.0.9"), ("action_space", "seed-21"), ("driver", "570.1"),
                             ("gpu", "NVIDIA H100"), ("ptxas", "13.0.88"), ("triton_hash", "g" * 64),
                             ("stock_ptx_sha256", "0" * 64)]:
            stale = replace(key(), **{field: other})
            assert db.get(stale) is None, field
            assert key().differences(stale) == {field: (getattr(key(), field), other)}
            assert (stale.code_key() == key().code_key()) == (field == "triton_hash"), field


def test_append_only(tmp_path):
    path = tmp_path / "t.sqlite"
    with TunedDB(path) as db:
        put(db)
    with sqlite3.connect(path) as raw:
        for sql in ("UPDATE tuned SET ratio = 0.1", "DELETE FROM tuned"):
            with pytest.raises(sqlite3.IntegrityError, match="append-only"):
                raw.execute(sql)


def test_content_hash_follows_the_live_entries(tmp_path):
    with TunedDB(tmp_path / "t.sqlite") as db:
        empty = db.content_hash()
        put(db)
        one = db.content_hash()
        put(db, ratio=0.75)  # same key, same PTX: same content
        assert db.content_hash() == one
        put(db, ptx=TUNED.replace("maxnreg 64", "maxnreg 128"), actions=["maxnreg_128"])
        assert len({empty, one, db.content_hash()}) == 3


def test_put_refuses_what_could_never_be_deployed(tmp_path):
    with TunedDB(tmp_path / "t.sqlite") as db:
        with pytest.raises(TunedDBError, match="exactly the entry 'k'"):
            put(db, ptx=TUNED.replace(".entry k(", ".entry k2("))
        with pytest.raises(TunedDBError, match="unknown actions"):
            put(db, actions=["unroll_8"])
        for ratio, ci in [(float("nan"), (0.7, 0.9)), (0.8, (0.9, 0.7)), (-1.0, (0.7, 0.9))]:
            with pytest.raises(TunedDBError, match="finite and positive"):
                put(db, ratio=ratio, ci=ci)
        with pytest.raises(TunedDBError, match="verification"):
            put(db, verification={})
        with pytest.raises(TunedDBError, match="JSON"):
            put(db, provenance={"x": object()})
        with pytest.raises(TunedDBError, match="non-empty strings: gpu"):
            key(gpu="")
        assert db.entries() == []


@pytest.mark.parametrize(("column", "value"),
                         [("ptx", TUNED.encode()), ("ratio", "fast"), ("ci_low", float("inf"))])
def test_a_row_of_the_wrong_types_is_one_clear_error(tmp_path, column, value):
    """SQLite keeps whatever a hand edit puts in a column: read, it is named, not an AttributeError."""
    import sqlite3

    path = tmp_path / "t.sqlite"
    with TunedDB(path) as db:
        put(db)
    raw = sqlite3.connect(path)
    cols = [r[1] for r in raw.execute("PRAGMA table_info(tuned)") if r[1] != "id"]
    row = dict(zip(cols, raw.execute(f"SELECT {', '.join(cols)} FROM tuned").fetchone(), strict=True))
    row[column] = value
    with raw:
        raw.execute(f"INSERT INTO tuned ({', '.join(cols)}) VALUES ({', '.join('?' * len(cols))})",
                    tuple(row.values()))
    raw.close()
    with TunedDB(path, readonly=True) as db, pytest.raises(TunedDBError, match=f"wrong type in {column}"):
        db.entries()


def test_readonly_open_creates_and_writes_nothing(tmp_path):
    missing, empty = tmp_path / "none.sqlite", tmp_path / "empty.sqlite"
    with pytest.raises(TunedDBError, match=f"{missing} does not exist"):
        TunedDB(missing, readonly=True)
    assert not missing.exists()
    empty.write_bytes(b"")
    with pytest.raises(TunedDBError, match=f"{empty} has schema version 0 and no table"):
        TunedDB(empty, readonly=True)
    assert empty.read_bytes() == b""
    path = tmp_path / "t.sqlite"
    with TunedDB(path) as db:
        put(db)
    written = f"cannot write to tuned DB {path}"
    with TunedDB(path, readonly=True) as ro, pytest.raises(TunedDBError, match=written):
        put(ro)


def test_damaged_files_are_errors_naming_the_file(tmp_path):
    garbage = tmp_path / "garbage.sqlite"
    garbage.write_bytes(b"not a database at all" * 100)
    for readonly in (True, False):
        with pytest.raises(TunedDBError, match=str(garbage)):
            TunedDB(garbage, readonly=readonly)
    edited = tmp_path / "edited.sqlite"
    with TunedDB(edited) as db:
        put(db)
    with sqlite3.connect(edited) as raw:  # a hand edit past the triggers: drop them, change the PTX
        raw.executescript("DROP TRIGGER no_update; UPDATE tuned SET ptx = ptx || ' ';")
    with TunedDB(edited, readonly=True) as db, pytest.raises(TunedDBError, match="row 1 fails its checksum"):
        db.get(key())


@pytest.mark.parametrize(("column", "value"), [("ratio", 0.08), ("ci_high", 0.86), ("actions", '["vec_ld"]'),
                                                ("created_at", "2020-01-01T00:00:00")])
def test_a_changed_value_in_any_column_fails_the_row_checksum(tmp_path, column, value):
    """Every column is summed: a flipped ratio would be shown, a flipped action derived, without it."""
    path = tmp_path / "t.sqlite"
    with TunedDB(path) as db:
        put(db)
    with sqlite3.connect(path) as raw:
        raw.executescript("DROP TRIGGER no_update;")
        raw.execute(f"UPDATE tuned SET {column} = ?", (value,))
    with TunedDB(path, readonly=True) as db, pytest.raises(TunedDBError, match="fails its checksum"):
        db.entries()


def test_a_db_of_the_older_schema_says_how_to_write_it_again(tmp_path):
    path = tmp_path / "v1.sqlite"
    with sqlite3.connect(path) as raw:
        raw.executescript("CREATE TABLE tuned (id INTEGER PRIMARY KEY); PRAGMA user_version = 1;")
    with pytest.raises(TunedDBError, match="an older Chronos wrote it: write it again"):
        TunedDB(path, readonly=True)


def test_show_is_a_table(tmp_path):
    path = tmp_path / "t.sqlite"
    with TunedDB(path) as db:
        put(db)
    text = show(path)
    assert "kernel" in text.splitlines()[0] and "maxnreg_64" in text and "0.800 [0.750, 0.850]" in text
    # which way the ratio reads: a user took 0.8 for "80% of the speed"
    assert "time ratio tuned/stock [99% CI] (<1 = faster)" in text.splitlines()[0]
    assert "NVIDIA H200" in text and "1 tuned kernel(s)" in text


def test_ptx_identity_ignores_source_paths_only():
    where = "\t.file\t1 \"/home/a/k.py\"\n\t.section\t.debug_info\n\t{\n.b8 47\n\t}\n"
    elsewhere = where.replace("/home/a", "/srv/b").replace(".b8 47", ".b8 115")
    assert ptx_identity_sha256(PTX + where) == ptx_identity_sha256(PTX + elsewhere)
    assert ptx_identity_sha256(PTX + where) != ptx_identity_sha256(TUNED + where)


def test_chronos_tuned_show_lists_the_db(tmp_path, capsys):
    from chronos.cli import main

    path = tmp_path / "tuned.sqlite"
    with TunedDB(path) as db:
        put(db)
    assert main(["tuned", "show", str(path)]) == 0
    out = capsys.readouterr().out
    assert "maxnreg_64" in out and "0.800 [0.750, 0.850]" in out and "1 tuned kernel(s)" in out
    assert "time ratio tuned/stock [99% CI] (<1 = faster)" in out.splitlines()[0]
    assert main(["tuned", "show", str(tmp_path / "none.sqlite")]) == 2


# ------------------------------------------------------------------ what is no tuned DB (issue 25)
NOT_A_DB = {"a text file": "is not an SQLite database", "an empty file": "it is empty: 0 bytes",
            "a folder": "is a folder", "/dev/null": "is not a regular file",
            "a missing path": "does not exist", "a symlink loop": "symbolic link to nothing"}
"""What a new user passed as a tuned DB -> what the error must say is wrong with it."""
_MAKE = {"a text file": ("notes.txt", lambda p: p.write_text("kernel  ratio\nk  0.8\n")),
         "an empty file": ("empty.sqlite", lambda p: p.write_bytes(b"")),
         "a folder": ("dbs", Path.mkdir), "a missing path": ("none.sqlite", lambda p: None),
         "a symlink loop": ("loop.sqlite", lambda p: p.symlink_to(p))}


def not_a_db(tmp_path: Path, monkeypatch, what: str) -> tuple[str, str]:
    """(the path as a user types it: relative to the working directory, its absolute form)."""
    if what == "/dev/null":
        return what, what
    monkeypatch.chdir(tmp_path)
    name, make = _MAKE[what]
    make(tmp_path / name)
    return name, str(tmp_path / name)


def assert_one_clear_error(error: BaseException, absolute: str, what: str) -> None:
    """A TunedDBError (a ChronosError) on one line, naming the file absolutely and what is wrong with it,
    with no sqlite3 exception chained in front of it."""
    assert isinstance(error, TunedDBError)
    message = str(error)
    assert absolute in message and NOT_A_DB[what] in message and "\n" not in message, message
    shown = "".join(traceback.format_exception(error))
    assert "During handling" not in shown and "direct cause" not in shown, shown


@pytest.mark.parametrize("what", NOT_A_DB)
def test_a_readonly_open_of_what_is_no_tuned_db_is_one_clear_error(tmp_path, monkeypatch, what):
    given, absolute = not_a_db(tmp_path, monkeypatch, what)
    with pytest.raises(TunedDBError) as raised:
        TunedDB(given, readonly=True)
    assert_one_clear_error(raised.value, absolute, what)


@pytest.mark.parametrize("what", ["a text file", "a folder", "/dev/null"])
def test_a_writable_open_refuses_what_is_no_tuned_db_and_leaves_it(tmp_path, monkeypatch, what):
    given, absolute = not_a_db(tmp_path, monkeypatch, what)
    before = sorted(p.name for p in tmp_path.iterdir())
    with pytest.raises(TunedDBError) as raised:
        TunedDB(given)
    assert_one_clear_error(raised.value, absolute, what)
    assert sorted(p.name for p in tmp_path.iterdir()) == before  # no schema written, no journal left


@pytest.mark.parametrize("what", NOT_A_DB)
def test_chronos_tuned_show_on_what_is_no_tuned_db_is_one_line_exit_2(tmp_path, monkeypatch, capsys, what):
    from chronos.cli import main

    given, absolute = not_a_db(tmp_path, monkeypatch, what)
    assert main(["tuned", "show", given]) == 2
    err = capsys.readouterr().err
    assert err.startswith("chronos: error: ") and err.count("\n") == 1, err
    assert absolute in err and NOT_A_DB[what] in err, err
