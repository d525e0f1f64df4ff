"""The JSON files stages and commands exchange: read with one error naming the file, written whole."""

from __future__ import annotations

import json
from pathlib import Path

from chronos.errors import ChronosError


def write_json(path: Path, obj, *, indent: int = 1, sort_keys: bool = False) -> None:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(obj, indent=indent, sort_keys=sort_keys) + "\n")


def read_json(path: Path, what: str = "input"):
    """A JSON input of a stage; a missing or truncated file is a one-line error naming it."""
    path = Path(path)
    try:
        return json.loads(path.read_text())
    except FileNotFoundError:
        raise ChronosError(f"{path}: {what} not found (run the stage that writes it first)") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise ChronosError(f"{path}: {what} is not valid JSON (truncated or corrupt?): {e}") from None


def read_json_file(path: Path, what: str, *, error: type[ChronosError] = ChronosError,
                   object_only: bool = False):
    """A JSON file Chronos reads (a part, a launch record, an identity file), or one `error` naming it:
    missing, unreadable, not UTF-8, not JSON, or (`object_only`) not a JSON object."""
    try:
        data = json.loads(Path(path).read_text())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
        raise error(f"unreadable {what} {path}: {e}") from None
    if object_only and not isinstance(data, dict):
        raise error(f"{what} {path} is not a JSON object")
    return data
