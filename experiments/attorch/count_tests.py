#!/usr/bin/env python3
"""Counts attorch's test items per file, and how many of them do real work under --subset.

Runs on a CPU machine: attorch calls torch.cuda.get_device_capability() at import time (utils.get_n_stages,
in the Linear and Conv autotune configs), so without a GPU the capability is faked as sm_90 (H200) for the
collection only. Nothing is executed.

    python experiments/attorch/count_tests.py [FILE ...]   # default: every tests/test_*.py

'collected' is what pytest reports (--subset filters nothing at collection: a test whose shape is not in the
subset returns at once and counts as passed). 'effective' approximates the items that launch kernels: a
'shape' parameter in the subset shapes (or no 'shape' parameter, or a test that ignores --subset) and not
fp16 without autocast (every attorch test returns early for input_dtype=float16, amp=False).
"""

from __future__ import annotations

import collections
import os
import sys
from pathlib import Path

import pytest

ATTORCH_DIR = Path(__file__).resolve().parents[2] / "third_party" / "attorch"


class Counter:
    def __init__(self) -> None:
        self.collected: collections.Counter[str] = collections.Counter()
        self.effective: collections.Counter[str] = collections.Counter()

    @pytest.hookimpl(trylast=True)  # after -k / -m deselection
    def pytest_collection_modifyitems(self, session, config, items) -> None:
        import torch
        from tests.utils import default_shapes

        subset_shapes = set(default_shapes(subset=True))
        for item in items:
            fname = Path(item.nodeid.split("::")[0]).name  # the nodeid is relative to pytest's rootdir
            self.collected[fname] += 1
            params = getattr(getattr(item, "callspec", None), "params", {})
            uses_subset = "subset" in getattr(item, "fixturenames", ())
            if uses_subset and "shape" in params and tuple(params["shape"]) not in subset_shapes:
                continue
            if params.get("input_dtype") is torch.float16 and params.get("amp") is False:
                continue
            self.effective[fname] += 1


def main(argv: list[str]) -> int:
    import torch

    if not torch.cuda.is_available():
        torch.cuda.get_device_capability = lambda *a, **k: (9, 0)
    os.chdir(ATTORCH_DIR)
    sys.path.insert(0, str(ATTORCH_DIR))
    files = argv or sorted(str(p.relative_to(ATTORCH_DIR)) for p in (ATTORCH_DIR / "tests").glob("test_*.py"))
    counter = Counter()
    args = ["--collect-only", "-q", "-p", "no:cacheprovider", "--subset", *files]
    rc = pytest.main(args, plugins=[counter])
    print(f"\n{'file':38s} {'collected':>10s} {'effective':>10s}")
    for fname in sorted(counter.collected):
        print(f"{fname:38s} {counter.collected[fname]:10d} {counter.effective[fname]:10d}")
    print(f"{'total':38s} {sum(counter.collected.values()):10d} {sum(counter.effective.values()):10d}")
    return int(rc)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
