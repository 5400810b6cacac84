"""A registered secret is masked in every spelling a message can carry it in: as typed, percent-encoded (as an
endpoint echoes a URL or a form body), JSON-escaped, and inside an HTTP Basic token."""

from __future__ import annotations

import base64
import json
import re
from urllib.parse import quote, quote_plus

from hypothesis import given, settings
from hypothesis import strategies as st

from focus_eval.redact import MASK, redact

KEY = "sk/Ab+c=d&e f%\\\"g"


def spellings(secret: str) -> list[str]:
    encoded = quote(secret, safe="")
    lower_hex = re.sub(r"%[0-9A-F]{2}", lambda m: m.group(0).lower(), encoded)
    return [secret, encoded, lower_hex, quote(secret), quote_plus(secret), json.dumps(secret)[1:-1]]


def test_each_spelling_of_a_key_with_reserved_characters_is_masked():
    for form in spellings(KEY):
        text = redact(f"upstream said: bad credential {form!s} in request", secrets=[KEY])
        assert form not in text and MASK in text, form


def test_a_basic_token_holding_the_key_is_masked():
    token = base64.b64encode(f"user:{KEY}".encode()).decode()
    assert token not in redact(f"Authorization: Basic {token}", secrets=[KEY])


def test_ordinary_text_is_left_alone():
    assert redact("HTTP 429: too many requests, retry after 3 s", secrets=[KEY]) == \
        "HTTP 429: too many requests, retry after 3 s"


@settings(max_examples=200, deadline=None)
@given(secret=st.text(st.characters(min_codepoint=32, max_codepoint=0x2FF), min_size=8, max_size=40),
       before=st.text(max_size=20), after=st.text(max_size=20))
def test_no_spelling_of_any_secret_survives(secret, before, after):
    for form in spellings(secret):
        out = redact(f"{before}{form}{after}", secrets=[secret])
        assert form not in out
        assert secret not in out
