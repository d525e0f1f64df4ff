"""chronos.progress: all items come through; bars appear only on a terminal outside CI, and only on stderr."""

from __future__ import annotations

import io
import sys

import pytest

from chronos.progress import enabled, progress, progress_bar


class FakeTTY(io.StringIO):
    def isatty(self) -> bool:
        return True


@pytest.fixture
def no_ci(monkeypatch):
    monkeypatch.delenv("CI", raising=False)


def test_not_a_tty_prints_nothing(no_ci, capsys):
    items = (i * i for i in range(50))
    assert list(progress(items, total=50, desc="atlas")) == [i * i for i in range(50)]
    with progress_bar(total=3, desc="grpo") as bar:
        for _ in range(3):
            bar.update(1)
            bar.set_postfix(loss=0.5)
        bar.set_description("grpo done")
    assert bar.n == 3
    assert capsys.readouterr() == ("", "")


def test_not_a_tty_returns_the_iterable_itself(no_ci):
    items = [1, 2, 3]
    assert progress(items) is items


def test_tty_draws_on_stderr_only(no_ci, monkeypatch, capsys):
    tty = FakeTTY()
    monkeypatch.setattr(sys, "stderr", tty)
    assert enabled()
    assert list(progress(range(7), desc="greedy")) == list(range(7))
    with progress_bar(total=2, desc="tune") as bar:
        bar.update(2)
    assert "greedy" in tty.getvalue() and "tune" in tty.getvalue()
    assert capsys.readouterr().out == ""


@pytest.mark.parametrize("value", ["1", "true", "yes"])
def test_ci_silences_even_a_tty(monkeypatch, value):
    tty = FakeTTY()
    monkeypatch.setattr(sys, "stderr", tty)
    monkeypatch.setenv("CI", value)
    assert not enabled()
    assert list(progress(range(5), desc="atlas")) == list(range(5))
    with progress_bar(total=1) as bar:
        bar.update()
    assert tty.getvalue() == ""


def test_a_closed_or_missing_stream_is_not_a_tty(no_ci):
    closed = io.StringIO()
    closed.close()
    assert not enabled(closed)
    assert not enabled(object())
