"""Wrapping a class's __init__ for the deployment and the kernel sets: once per mark, stacking; patching a
module as it is imported, by every finder that names it."""

from __future__ import annotations

import sys


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


def test_two_finders_of_one_module_both_patch_it_when_it_is_first_imported(tmp_path, monkeypatch):
    from chronos.triton.patch_on_import import PatchOnImport

    (tmp_path / "chronos_fake_jit.py").write_text("class JITFunction:\n    pass\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    seen = []
    finders = [PatchOnImport({"chronos_fake_jit": lambda m, tag=tag: seen.append(tag)}, seen.append)
               for tag in ("configs", "sets")]
    try:
        for f in finders:
            f.install()  # not imported yet: nothing patched now
        assert seen == []
        import chronos_fake_jit  # noqa: F401 - the import is the test
        assert sorted(seen) == ["configs", "sets"]
    finally:
        for f in finders:
            sys.meta_path.remove(f)
        sys.modules.pop("chronos_fake_jit", None)
