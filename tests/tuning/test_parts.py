"""chronos.tuning.parts' readers: a broken part or identity file is one ChronosError naming it (#26: the
merge into a tuned DB used to end in a JSONDecodeError or an AttributeError traceback)."""

from __future__ import annotations

import pytest

from chronos.errors import ChronosError
from chronos.tuning.parts import read_part, triton_identity


@pytest.mark.parametrize(("text", "says"), [("{", "unreadable tune part"), ("[1]", "is not a JSON object")])
def test_a_part_that_is_no_json_object_is_named(tmp_path, text, says):
    (tmp_path / "k.json").write_text(text)
    with pytest.raises(ChronosError, match=says) as e:
        read_part(tmp_path / "k.json")
    assert str(tmp_path / "k.json") in str(e.value)


@pytest.mark.parametrize("text", ["[1]", '{"k": 1}', '{"k": {"hash": "h"}}', "\xff"])
def test_a_triton_json_that_is_no_identity_map_is_named(tmp_path, text):
    (tmp_path / "triton.json").write_text(text)
    with pytest.raises(ChronosError, match="triton.json"):
        triton_identity(tmp_path)
    assert triton_identity(tmp_path / "absent") is None
