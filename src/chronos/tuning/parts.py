"""A tune's part files (one JSON object per kernel under the parts folder), DIR/triton.json's Triton
identities, and the candidate a part row returned."""

from __future__ import annotations

from pathlib import Path

from chronos.errors import ChronosError
from chronos.files import read_json_file


def triton_identity(dir_: Path) -> dict | None:
    """DIR/triton.json: each kernel's Triton identity as capture writes it; None without the file."""
    path = dir_ / "triton.json"
    if not path.is_file():
        return None
    data = read_part(path, "Triton identity file")
    if not all(isinstance(v, dict) and {"hash", "name", "stock_ptx"} <= set(v) for v in data.values()):
        raise ChronosError(f"{path}: not a map of kernels to Triton identities (hash, name, stock_ptx)")
    return data


def read_part(path: Path, what: str = "tune part") -> dict:
    """A JSON object file of the tune (a part, triton.json), or one ChronosError naming it."""
    return read_json_file(path, what, object_only=True)


def returned_candidate(row: dict) -> dict | None:
    """The measured candidate a part row returned (its time ratio tuned/stock and interval); None for the
    baseline."""
    if row.get("returned", "baseline") == "baseline":
        return None
    return next((c for c in [row.get("greedy"), *row.get("beam", []), *row.get("fixed", [])]
                 if c and "+".join(c["actions"]) == row["returned"]), None)
