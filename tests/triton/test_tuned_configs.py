"""Tuned compile configs in the tuned DB (#28): appended and checksummed like the tuned PTX, the newest row of
a key wins, what could never deploy is refused, and `chronos tuned show` lists them."""

from __future__ import annotations

import sqlite3

import pytest

from chronos.triton.tuned_configs import ConfigKey, KernelConfig, config_entries, put_config, show
from chronos.triton.tuned_db import TunedDB, TunedDBError

KEY = ConfigKey("triton_poi_fused_mul_0", "ab" * 32, "NVIDIA H200", "2.11.0+cu130", "3.6.0")
STOCK = KernelConfig({"XBLOCK": 512}, 4, 1)
TUNED = KernelConfig({"XBLOCK": 1024}, 8, 1)


def test_a_config_entry_round_trips_and_the_newest_of_a_key_wins(tmp_path):
    path = tmp_path / "tuned.sqlite"
    with TunedDB(path) as db:
        assert config_entries(db) == []  # a DB without the table holds none
        put_config(db, KEY, STOCK, TUNED, 0.9, (0.88, 0.92), {"bit_exact": True}, {"gpu_run": "x"})
        put_config(db, KEY, STOCK, KernelConfig({"XBLOCK": 256}, 2, 1), 0.95, (0.94, 0.96),
                   {"bit_exact": True})
    with TunedDB(path, readonly=True) as db:
        (e,) = config_entries(db)
    assert e.tuned == KernelConfig({"XBLOCK": 256}, 2, 1) and e.stock == STOCK and e.ratio == 0.95
    text = show(path)
    assert "XBLOCK=512,num_warps=4,num_stages=1 -> XBLOCK=256,num_warps=2,num_stages=1" in text
    assert "bit-exact" in text and "1 tuned config(s)" in text and "0 tuned kernel(s)" in text


def test_what_could_never_deploy_is_refused(tmp_path):
    with TunedDB(tmp_path / "t.sqlite") as db:
        with pytest.raises(TunedDBError, match="must differ"):
            put_config(db, KEY, STOCK, STOCK, 0.9, (0.8, 0.95), {"bit_exact": True})
        with pytest.raises(TunedDBError, match="finite and positive"):
            put_config(db, KEY, STOCK, TUNED, float("nan"), (0.8, 0.95), {"bit_exact": True})
        with pytest.raises(TunedDBError, match="verification"):
            put_config(db, KEY, STOCK, TUNED, 0.9, (0.8, 0.95), {})


def test_a_config_row_is_append_only_and_a_flipped_value_is_caught(tmp_path):
    path = tmp_path / "t.sqlite"
    with TunedDB(path) as db:
        put_config(db, KEY, STOCK, TUNED, 0.9, (0.88, 0.92), {"bit_exact": True})
        with pytest.raises(TunedDBError, match="append-only"), db._errors("write to"):
            db.db.execute("UPDATE configs SET ratio = 0.5")
    raw = sqlite3.connect(path)
    raw.execute("DROP TRIGGER configs_no_update")
    raw.execute("UPDATE configs SET ratio = 0.5")
    raw.commit()
    raw.close()
    with TunedDB(path, readonly=True) as db, pytest.raises(TunedDBError, match="checksum"):
        config_entries(db)
