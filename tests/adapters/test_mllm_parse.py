"""The hard label from generated text, and the single-token answer variants."""

import pytest

from focus_eval.adapters.mllm_parse import parse_yes_no, single_token_variants


@pytest.mark.parametrize("text, expected", [
    ("Yes.", 1),
    ("yes", 1),
    ("**No**", 0),
    ("**yes**", 1),
    ("I think yes", 1),
    ("Answer: NO, because", 0),
    ("no, yes", 0),
    ("yes, no", 1),
    ("\n\nYes", 1),
    ("none", None),
    ("yesterday", None),
    ("nope, noted", None),
    ("know", None),
    ("", None),
    (None, None),
    ("maybe", None),
    ("yes_no", None),
])
def test_parse_yes_no(text, expected):
    assert parse_yes_no(text) == expected


class _Tokenizer:
    """Encodes from a fixed table; anything else is two tokens."""

    table = {"yes": [5], " yes": [6], "Yes": [7], "\nYes": [8], "no": [9]}

    def encode(self, text, add_special_tokens=False):
        return self.table.get(text, [1, 2])


def test_single_token_variants_keep_only_single_tokens():
    found = single_token_variants(_Tokenizer(), ("yes", "Yes"))
    assert found == {"yes": 5, " yes": 6, "Yes": 7, "\nYes": 8}
    assert single_token_variants(_Tokenizer(), ("no", "No")) == {"no": 9}
