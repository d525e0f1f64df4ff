"""What every transform shares: the pure-rewrite helper and the 'nothing to do' signal."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

from chronos.ptx.ir import Function, Module, Statement


def rewrite_bodies(module: Module, rewrite: Callable[[Function], list[Statement] | None]) -> Module:
    """A new Module whose entries' bodies are `rewrite(fn)` (None keeps the body).

    Transforms never mutate statements: they build new lists and new Instructions, so sharing the
    unchanged statement objects between the input and the output keeps `apply` pure and cheap.
    """
    items = []
    for item in module.items:
        if isinstance(item, Function) and item.is_entry and item.body is not None:
            body = rewrite(item)
            if body is not None:
                item = dataclasses.replace(item, body=body, directives=list(item.directives))
        items.append(item)
    return dataclasses.replace(module, items=items)


def rewrite_functions(module: Module, rewrite: Callable[[Function], Function | None]) -> Module:
    """A new Module with each entry replaced by `rewrite(fn)` (None keeps it)."""
    items = []
    for item in module.items:
        if isinstance(item, Function) and item.is_entry and item.body is not None:
            item = rewrite(item) or item
        items.append(item)
    return dataclasses.replace(module, items=items)
