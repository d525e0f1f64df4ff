"""Patch a module right after it is imported, whoever imports it (the workload's own code included).

`chronos capture` and `chronos run` start in every process of a workload before it imports torch or Triton
(a bootstrap `sitecustomize`), so the classes they wrap are patched as their modules load; a module that is
already imported is patched at once.
"""

from __future__ import annotations

import importlib.abc
import sys
from collections.abc import Callable

Patch = Callable[[object], None]


class PatchOnImport(importlib.abc.MetaPathFinder):
    """Applies `patches[name]` to module `name` right after it executes; `on_error(name)` is called (inside
    the except block) when a patch raises, and the import goes on."""

    def __init__(self, patches: dict[str, Patch], on_error: Callable[[str], None]):
        self.patches, self.on_error = patches, on_error

    def find_spec(self, name, path, target=None):
        if name not in self.patches:
            return None
        for finder in sys.meta_path:
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(name, path, target)
            if spec is not None and spec.loader is not None:
                spec.loader = _PatchingLoader(spec.loader, self, name)
                return spec
        return None

    def apply(self, name: str, module) -> None:
        try:
            self.patches[name](module)
        except Exception:  # noqa: BLE001 - an unexpected torch/Triton version: report, never break
            self.on_error(name)

    def install(self) -> PatchOnImport:
        """Go first on sys.meta_path and patch the modules already imported."""
        if self not in sys.meta_path:
            sys.meta_path.insert(0, self)
        for name in self.patches:
            if name in sys.modules:
                self.apply(name, sys.modules[name])
        return self


def after_init(cls, mark: str, then: Callable[[object], None]) -> None:
    """Wrap `cls.__init__` once per `mark` so that `then(instance)` runs after it (several marks stack)."""
    init = cls.__init__
    if getattr(init, mark, False):
        return

    def __init__(self, *args, **kwargs):
        init(self, *args, **kwargs)
        then(self)

    marks = (*getattr(init, "__chronos_marks__", ()), mark)  # the wrappers below stay visible as wrapped
    for m in marks:
        setattr(__init__, m, True)
    __init__.__chronos_marks__ = marks
    cls.__init__ = __init__


class _PatchingLoader(importlib.abc.Loader):
    def __init__(self, loader, finder: PatchOnImport, name: str):
        self.loader, self.finder, self.name = loader, finder, name

    def create_module(self, spec):
        return self.loader.create_module(spec)

    def exec_module(self, module):
        self.loader.exec_module(module)
        self.finder.apply(self.name, module)
