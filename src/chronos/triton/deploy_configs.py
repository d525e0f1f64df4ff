"""Deploy tuned compile configs (chronos.triton.tuned_configs): the kernel is compiled by Triton itself with
the tuned block sizes, num_warps, num_stages or maxnreg, so its launcher, grid and metadata agree with it;
nothing is swapped after compilation.

Two places decide a Triton kernel's config, and both are wrapped when their modules load
(chronos.triton.patch_on_import):
- Inductor's `CachingAutotuner.__init__`: where its configs include the entry's stock config, they become
  the tuned one alone (Inductor computes the grid from the config it compiles); a template's row blocks
  make it the edited template's autotuner, with the grid of its row blocks (chronos.triton.deploy_rows);
- `triton.runtime.jit.JITFunction.run`: where a launch passes exactly the entry's stock constexprs and
  options (num_warps and num_stages default to Triton's 4 and 3), it runs with the tuned ones (a grid
  callable sees them too).
Anything else runs as it would have, counted with why. An entry that is not bit-exact deploys only where it
records the tolerance its tune was run with (`chronos tune --tolerance`: the user's deliberate choice).
"""

from __future__ import annotations

import hashlib
import threading

from chronos.triton.deploy_rows import row_block_tuner, row_change
from chronos.triton.patch_on_import import PatchOnImport, after_init, wrap_method
from chronos.triton.tuned_configs import ConfigEntry, KernelConfig

JIT_DEFAULTS = {"num_warps": 4, "num_stages": 3}


def source_sha256(fn) -> str | None:
    src = getattr(fn, "src", None)
    return hashlib.sha256(src.encode()).hexdigest() if isinstance(src, str) else None


class ConfigSession:
    """One deployment: the entries by (function, source), the environment they must match, the counts."""

    def __init__(self, entries: list[ConfigEntry], env):
        self.entries, self.env_of = entries, env  # env(): {gpu, torch, triton} of this process, asked once
        self.env: dict | None = None
        self.by_source: dict[tuple[str, str], ConfigEntry] = {}
        self.refused: dict[tuple[str, str], str] = {}
        self.counts = {"applied": [], "missed": [], "rejected": []}
        self.reasons: dict[str, str] = {}
        self.idents: dict[int, tuple[object, tuple[str, str | None]]] = {}  # holds fn: ids stay unique
        self.lock = threading.Lock()

    def _index(self) -> None:
        """At the first lookup (torch is imported by then): which entries this process may deploy."""
        self.env = dict(self.env_of())
        for e in self.entries:
            k = (e.key.function, e.key.source_sha256)
            why = self._refusal(e)
            if why is None:
                self.by_source[k] = e
                self.refused.pop(k, None)
            else:
                self.refused[k] = why

    def _refusal(self, e: ConfigEntry) -> str | None:
        if not e.verification.get("bit_exact") and not e.verification.get("tolerance"):
            return "not bit-exact and tuned with no tolerance (a strict entry must be bit-exact)"
        for what in ("gpu", "torch", "triton"):
            mine, theirs = self.env.get(what), getattr(e.key, what)
            if theirs and mine != theirs:
                return f"tuned for {what} {theirs}, this process has {mine}"
        return None

    def _record(self, outcome: str, name: str, why: str | None = None) -> None:
        with self.lock:
            if name not in self.counts[outcome]:
                self.counts[outcome].append(name)
            if why:
                self.reasons[name] = why

    def lookup(self, fn) -> tuple[str, ConfigEntry | None]:
        """(name, entry) for a JIT function; the source hash is computed once per function object."""
        if self.env is None:
            self._index()
        name = getattr(fn, "__name__", None) or getattr(getattr(fn, "fn", None), "__name__", "?")
        held = self.idents.get(id(fn))
        ident = held[1] if held is not None else (name, source_sha256(fn))
        if held is None:
            self.idents[id(fn)] = (fn, ident)
        if ident in self.refused:
            self._record("rejected", name, self.refused[ident])
        return name, self.by_source.get(ident)

    def inductor(self, autotuner) -> None:
        """The tuned config alone where the autotuner's configs hold the entry's stock one (a template's row
        blocks: the autotuner made the edited template's, chronos.triton.deploy_rows)."""
        for cfg in autotuner.configs:
            if (tuned := self.tuned_config(autotuner, cfg, quiet=True)) is not None:
                if blocks := row_change(dict(cfg.kwargs), dict(tuned.kwargs)):
                    if (new := self._row_tuner(autotuner, blocks, tuned)) is not None:  # before it compiles
                        autotuner.fn, autotuner.inductor_meta, autotuner.configs = \
                            new.fn, new.inductor_meta, new.configs
                else:
                    autotuner.configs = [tuned]
                return
        name, entry = self.lookup(autotuner.fn)
        if entry is not None:
            self._record("missed", name, "the entry's stock config is not among Inductor's configs here")

    def tuned_config(self, autotuner, cfg, quiet: bool = False):
        """The tuned copy of Inductor config `cfg` where the entry's stock config is exactly `cfg`, else None
        (counted as a miss unless `quiet`)."""
        name, entry = self.lookup(autotuner.fn)
        if entry is None:
            return None
        if _as_config(cfg) != entry.stock:
            if not quiet:
                self._record("missed", name, "the config it runs is not the entry's stock config")
            return None
        self._record("applied", name, f"{entry.stock.label()} -> {entry.tuned.label()}")
        return _copy_config(cfg, entry.tuned)

    def compile_plan(self, autotuner, cfg):
        """(the autotuner to compile with, its config) for a launch that runs `cfg`: the tuned config where
        the entry's stock is exactly `cfg` (for a row-block entry, with a tuner of the edited template),
        else (autotuner, cfg)."""
        tuned = self.tuned_config(autotuner, cfg)
        blocks = row_change(dict(cfg.kwargs), dict(tuned.kwargs)) if tuned is not None else {}
        if not blocks:
            return autotuner, tuned or cfg
        new = self._row_tuner(autotuner, blocks, tuned)
        return (autotuner, cfg) if new is None else (new, new.configs[0])

    def _row_tuner(self, autotuner, blocks: dict, tuned):
        """The edited template's tuner (chronos.triton.deploy_rows), or None where it cannot be made: the
        entry, counted applied, becomes a miss with why, and the template runs stock."""
        try:
            return row_block_tuner(autotuner, blocks, tuned)
        except Exception as e:  # noqa: BLE001 - a template this cannot edit runs stock, said
            name = autotuner.fn.__name__
            with self.lock:
                if name in self.counts["applied"]:
                    self.counts["applied"].remove(name)
            self._record("missed", name, f"its row blocks cannot be deployed: {type(e).__name__}: {e}")
            return None

    def jit_kwargs(self, fn, kwargs: dict) -> dict:
        """The launch's keyword arguments, with the tuned config where they are exactly the stock one."""
        name, entry = self.lookup(fn)
        if entry is None:
            return kwargs
        stock = entry.stock
        given = {k: kwargs.get(k, JIT_DEFAULTS.get(k)) for k in ("num_warps", "num_stages")}
        if any(kwargs.get(k) != v for k, v in stock.kwargs.items()) or given != {
                "num_warps": stock.num_warps, "num_stages": stock.num_stages} or \
                kwargs.get("maxnreg") != stock.maxnreg:
            self._record("missed", name, "this launch's constexprs or options are not the entry's stock ones")
            return kwargs
        t = entry.tuned
        out = {**kwargs, **t.kwargs, "num_warps": t.num_warps, "num_stages": t.num_stages}
        if t.maxnreg is not None:
            out["maxnreg"] = t.maxnreg
        self._record("applied", name, f"{stock.label()} -> {t.label()}")
        return out

    def stats(self) -> dict:
        with self.lock:
            return {**{k: len(v) for k, v in self.counts.items()},
                    **{f"{k}_names": list(v) for k, v in self.counts.items()}, "reasons": dict(self.reasons)}


def _as_config(cfg) -> KernelConfig | None:
    try:
        return KernelConfig(dict(cfg.kwargs), int(cfg.num_warps), int(cfg.num_stages),
                            getattr(cfg, "maxnreg", None))
    except (AttributeError, TypeError, ValueError):
        return None


def _copy_config(cfg, tuned: KernelConfig):
    import copy

    out = copy.copy(cfg)
    out.kwargs, out.num_warps, out.num_stages = dict(tuned.kwargs), tuned.num_warps, tuned.num_stages
    if hasattr(out, "maxnreg"):
        out.maxnreg = tuned.maxnreg
    return out


_STATE: dict = {"session": None, "last": None, "finder": None}


def _apply(autotuner) -> None:
    session = _STATE["session"]
    if session is not None:
        session.inductor(autotuner)


def _wrap_inductor(mod) -> None:
    after_init(mod.CachingAutotuner, "__chronos_configs__", _apply)


def _wrap_jit(mod) -> None:
    def make(run):
        def wrapped(self, *args, grid, warmup, **kwargs):
            session = _STATE["session"]
            if session is not None:
                kwargs = session.jit_kwargs(self, kwargs)
            return run(self, *args, grid=grid, warmup=warmup, **kwargs)
        return wrapped

    wrap_method(mod.JITFunction, "run", "__chronos_configs__", make)


PATCHES = {"torch._inductor.runtime.triton_heuristics": _wrap_inductor, "triton.runtime.jit": _wrap_jit}


def enable(entries: list[ConfigEntry], env, on_error) -> ConfigSession:
    """Deploy `entries` into every later config decision of this process (modules imported later are
    wrapped when they load); `env()` gives this process's {gpu, torch, triton} at the first lookup;
    `on_error(module)` hears of a module that could not be wrapped."""
    session = ConfigSession(entries, env)
    _STATE["session"] = session
    if _STATE["finder"] is None:
        _STATE["finder"] = PatchOnImport(PATCHES, on_error)
    _STATE["finder"].install()
    return session


def disable() -> None:
    if _STATE["session"] is not None:
        _STATE["session"], _STATE["last"] = None, _STATE["session"]


def stats() -> dict:
    """The tuned configs applied, missed and rejected since the last enable(), with reasons."""
    session = _STATE["session"] or _STATE["last"]
    if session is None:
        return {**dict.fromkeys(("applied", "missed", "rejected"), 0),
                **{f"{k}_names": [] for k in ("applied", "missed", "rejected")}, "reasons": {}}
    return {"entries": len(session.entries), **session.stats()}
