"""The tuned DB written from tune parts: what its verification record says (#28 item 2)."""

from __future__ import annotations


def test_an_entry_tuned_under_a_tolerance_says_so_and_a_strict_one_is_bit_exact():
    from chronos.tuning.db import verification

    row = {"verified_draws": 2, "tolerance": "rtol=1e-05"}
    strict = verification({"verified_draws": 2}, {"verdict": "faster", "reason": ""})
    assert strict["bit_exact"] is True and "tolerance" not in strict
    loose = verification(row, {"verdict": "faster", "reason": "within_tolerance", "log": "within rtol=1e-05"})
    assert loose["bit_exact"] is False and loose["tolerance"] == "rtol=1e-05"
    assert loose["numerics"].startswith("within")
