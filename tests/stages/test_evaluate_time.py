"""The optimize path also refuses a variant that is clearly faster in cycles but clearly slower in wall time."""

from chronos.search.base import Outcome
from chronos.stages.evaluate import _verdict, clearly_slower_in_time


def _o(cycles, time_ms, time_iqr=0.0002):
    return Outcome(("vec_ld",), True, cycles=cycles, cycles_iqr=10.0, time_ms=time_ms, time_ms_iqr=time_iqr)


def test_clearly_slower_in_time_needs_the_iqr_bands_apart():
    base = _o(1000.0, 0.0100)
    assert clearly_slower_in_time(_o(800.0, 0.0110), base)
    assert not clearly_slower_in_time(_o(800.0, 0.0101), base)  # above the median, inside the bands
    assert not clearly_slower_in_time(_o(800.0, 0.0090), base)


def test_verdicts():
    base = _o(1000.0, 0.0100)
    assert _verdict(("vec_ld",), _o(800.0, 0.0110), base, 0.005) == "slower_in_time"
    assert _verdict(("vec_ld",), _o(800.0, 0.0100), base, 0.005) == "faster"
    assert _verdict(("vec_ld",), _o(999.0, 0.0090), base, 0.005) == "not_faster"
    assert _verdict((), base, base, 0.005) == "stop_first"
