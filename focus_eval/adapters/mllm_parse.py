"""Answer parsing for yes/no prompts: the hard label from generated text, and the answer-token variants."""

from __future__ import annotations

import re

# A standalone yes/no: word boundaries on both sides, so "yesterday" and "none" do not count, while
# markdown emphasis ("**No**") and trailing punctuation ("Yes.") do.
_ANSWER = re.compile(r"\b(yes|no)\b", re.IGNORECASE)

YES_WORDS = ("yes", "Yes")
NO_WORDS = ("no", "No")
# Leading characters a first answer token may carry in the tokenizers of the benchmarked models.
PREFIXES = ("", " ", "\n")


def parse_yes_no(text: str | None) -> int | None:
    """1 for yes, 0 for no, from the first standalone yes/no in ``text``; None when there is none."""
    if not text:
        return None
    match = _ANSWER.search(text)
    if match is None:
        return None
    return 1 if match.group(1).lower() == "yes" else 0


def single_token_variants(tokenizer, words: tuple[str, ...], prefixes: tuple[str, ...] = PREFIXES) -> dict[str, int]:
    """Variant text -> token id for every ``prefix + word`` that the tokenizer encodes as exactly one token."""
    found: dict[str, int] = {}
    for word in words:
        for prefix in prefixes:
            ids = tokenizer.encode(prefix + word, add_special_tokens=False)
            if len(ids) == 1:
                found[prefix + word] = int(ids[0])
    return found
