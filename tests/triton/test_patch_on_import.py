"""Wrapping a class's __init__ for the deployment and the kernel sets: once per mark, stacking."""

from __future__ import annotations


def test_after_init_wraps_once_per_mark_and_marks_stack():
    from chronos.triton.patch_on_import import after_init

    class Tuner:
        def __init__(self, x):
            self.x = x

    seen = []
    after_init(Tuner, "__first__", lambda t: seen.append(("first", t.x)))
    after_init(Tuner, "__second__", lambda t: seen.append(("second", t.x)))
    after_init(Tuner, "__first__", lambda t: seen.append(("again", t.x)))  # already wrapped under this mark
    Tuner(7)
    assert seen == [("first", 7), ("second", 7)]
