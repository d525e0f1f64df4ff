"""Progress bars for long loops (atlas, greedy, GRPO, tune): tqdm on stderr, for a person watching only.

A bar is drawn only when stderr is a terminal and the CI environment variable is unset (or "0"/"false"/
"no"); otherwise nothing is printed, so CI logs and the pipeline's byte-identical outputs are untouched.
Bars never write to stdout.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import Any, TextIO, TypeVar

T = TypeVar("T")

_CI_OFF = ("", "0", "false", "no")


def enabled(stream: TextIO | None = None) -> bool:
    """True iff a bar should be drawn on `stream` (default: the current sys.stderr)."""
    if os.environ.get("CI", "").strip().lower() not in _CI_OFF:
        return False
    stream = sys.stderr if stream is None else stream
    try:
        return bool(stream is not None and stream.isatty())
    except (AttributeError, ValueError, OSError):  # no isatty, or a closed stream
        return False


def progress(iterable: Iterable[T], total: int | None = None, desc: str = "", *, unit: str = "it",
             leave: bool = False) -> Iterable[T]:
    """`iterable` with a progress bar on stderr when `enabled()`, else `iterable` itself (not wrapped).

    total: the length when `iterable` has no len() (a generator); leave: keep the finished bar on screen."""
    if not enabled():
        return iterable
    from tqdm import tqdm

    return tqdm(iterable, total=total, desc=desc or None, unit=unit, leave=leave, file=sys.stderr,
                dynamic_ncols=True)


class _NoBar:
    """What progress_bar yields when bars are off: tqdm's updating methods, doing nothing."""

    n = 0

    def update(self, n: float = 1) -> None:
        self.n += n

    def set_postfix(self, *args: Any, **kwargs: Any) -> None:
        pass

    def set_description(self, desc: str | None = None, refresh: bool = True) -> None:
        pass


@contextmanager
def progress_bar(total: int | None = None, desc: str = "", *, unit: str = "it",
                 leave: bool = False) -> Iterator[Any]:
    """A bar for manual updates: `with progress_bar(total=n, desc="grpo") as bar: ... bar.update(1)`.

    Yields a tqdm bar when `enabled()`, else an object with the same update/set_postfix/set_description
    that prints nothing."""
    if not enabled():
        yield _NoBar()
        return
    from tqdm import tqdm

    with tqdm(total=total, desc=desc or None, unit=unit, leave=leave, file=sys.stderr,
              dynamic_ncols=True) as bar:
        yield bar
