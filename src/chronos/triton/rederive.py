"""The tuned DB holds decisions, not code: at deployment the tuned PTX is made again from the user's own
stock PTX by applying the entry's actions (Chronos's transforms: pure, legal by construction, milliseconds),
and it is swapped in only when it hashes to what the entry recorded (the variant that was measured).

A DB can so only choose among legal transforms of the kernel it is deployed on; it can never inject a body
(another kernel's code, an empty `{ ret; }`, launch bounds hidden behind a comment). The one input besides
the actions is the alignment contract the transforms relied on while tuning (pointer parameters that Triton
specialised as 16-byte aligned, which its compile hash in the entry's key holds); a contract claiming any
other alignment, or naming what is not a pointer parameter of the entry, is refused.
"""

from __future__ import annotations

from chronos.errors import ChronosError
from chronos.triton.tuned_db import Entry, ptx_identity_sha256

TRITON_ALIGNMENT = 16
"""The only pointer alignment Triton specialises on (data_ptr % 16 == 0), so the only one a contract names."""


class DeriveError(ChronosError):
    """An entry whose decisions do not remake its recorded PTX from this stock PTX."""


def contract(entry: Entry) -> dict[str, int]:
    """The alignment contract the entry was tuned under (tune records it in the provenance)."""
    raw = entry.provenance.get("alignment", {})
    if not isinstance(raw, dict) or any(v != TRITON_ALIGNMENT for v in raw.values()):
        raise DeriveError(f"alignment contract {raw!r} is not a map of pointer parameters to "
                          f"{TRITON_ALIGNMENT} bytes")
    return dict(raw)


def derive(stock_ptx: str, actions, alignment: dict[str, int]) -> str:
    """`actions` applied in order to `stock_ptx` under `alignment` (register budgets without their ptxas
    verdict: the compile that follows assembles the result, and a refusal there falls back to stock)."""
    from chronos.ptx import emit, parse
    from chronos.transforms import apply

    module = parse(stock_ptx)
    pointers = {p.name for fn in module.entries() for p in fn.params if p.is_ptr}
    if unknown := sorted(set(alignment) - pointers):
        raise DeriveError(f"alignment contract names {unknown}, not pointer parameters of the kernel")
    module.align_contract.update(alignment)
    for action in actions:
        module = apply(module, action, defer_ptxas=True)
    return emit(module)


def tuned_ptx(stock_ptx: str, entry: Entry) -> str:
    """The PTX to swap in for `entry`: its actions remade on `stock_ptx`, checked against the recorded
    variant's identity (its code, less the source paths Triton writes into `.file` lines)."""
    try:
        ptx = derive(stock_ptx, entry.actions, contract(entry))
    except ChronosError as e:
        raise DeriveError(f"its actions {'+'.join(entry.actions)} do not apply to this stock PTX: "
                          f"{e.args[0] if e.args else e}") from None
    if ptx_identity_sha256(ptx) != ptx_identity_sha256(entry.ptx):
        raise DeriveError(f"its recorded PTX is not what its actions {'+'.join(entry.actions) or '(none)'} "
                          "make of this stock PTX (the entry was edited, or tuned under another alignment "
                          "contract): deployed stock")
    return ptx
