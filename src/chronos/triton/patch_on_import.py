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
        """The module's spec from the other finders, its loader patching it after it executes: with the
        patches of every PatchOnImport on sys.meta_path that names it (asking them instead would recurse)."""
        if name not in self.patches:
            return None
        for finder in sys.meta_path:
            if isinstance(finder, PatchOnImport) or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(name, path, target)
            if spec is not None and spec.loader is not None:
                spec.loader = _PatchingLoader(spec.loader, name)
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
    def make(init):
        def __init__(self, *args, **kwargs):
            init(self, *args, **kwargs)
            then(self)
        return __init__

    wrap_method(cls, "__init__", mark, make)


def wrap_method(cls, name: str, mark: str, make: Callable) -> None:
    """Replace `cls.<name>` by `make(the method)` once per `mark`; wrappers of other marks stack, each
    staying visible to its own check."""
    method = getattr(cls, name)
    if getattr(method, mark, False):
        return
    wrapped = make(method)
    marks = (*getattr(method, "__chronos_marks__", ()), mark)  # the wrappers below stay visible as wrapped
    for m in marks:
        setattr(wrapped, m, True)
    wrapped.__chronos_marks__ = marks
    setattr(cls, name, wrapped)


class _PatchingLoader(importlib.abc.Loader):
    def __init__(self, loader, name: str):
        self.loader, self.name = loader, name

    def create_module(self, spec):
        return self.loader.create_module(spec)

    def exec_module(self, module):
        self.loader.exec_module(module)
        for finder in list(sys.meta_path):
            if isinstance(finder, PatchOnImport) and self.name in finder.patches:
                finder.apply(self.name, module)
