"""Hypothesis throws generated requests at ``focus-eval serve``'s request parser: JSON-ish bodies of every shape
(chat requests with fields of the wrong types, random JSON, raw bytes), text encodings, truncation, Content-Type,
Content-Length, methods, paths and Host names. The server never answers 500, every error is the JSON error
shape, and it keeps answering after each request."""

from __future__ import annotations

import base64
import io
import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from serve_support import error_of, exchange, request_bytes, serving


def _png() -> str:
    from PIL import Image

    buffer = io.BytesIO()
    Image.new("RGB", (8, 6), (200, 40, 0)).save(buffer, format="PNG")
    return "data:image/png;base64," + base64.b64encode(buffer.getvalue()).decode()


scalars = st.none() | st.booleans() | st.integers(-10, 10 ** 6) | st.floats() | st.text(max_size=12)
json_values = st.recursive(scalars, lambda inner: st.lists(inner, max_size=3)
                           | st.dictionaries(st.text(max_size=6), inner, max_size=3), max_leaves=12)
urls = st.one_of(st.just(_png()), st.text(max_size=20), json_values,
                 st.binary(max_size=40).map(lambda b: "data:image/png;base64," + base64.b64encode(b).decode()))
texts = st.one_of(st.text(max_size=20), json_values)
parts = st.one_of(st.fixed_dictionaries({"type": st.just("text"), "text": texts}),
                  st.fixed_dictionaries({"type": st.just("image_url"),
                                         "image_url": st.one_of(urls, st.fixed_dictionaries({"url": urls}))}),
                  json_values)
turns = st.fixed_dictionaries({"role": st.sampled_from(["user", "system", "assistant"]) | json_values,
                               "content": st.one_of(st.text(max_size=30), st.lists(parts, max_size=3), json_values)})
chat = st.fixed_dictionaries(
    {"messages": st.one_of(st.lists(turns, min_size=1, max_size=2), json_values)},
    optional={"model": st.sampled_from(["fake-mllm", "gpt-4o"]) | json_values,
              "max_tokens": st.integers(-2, 80) | json_values, "max_completion_tokens": st.integers(-2, 80),
              "temperature": st.sampled_from([0, 0.0, 0.7]) | json_values, "n": st.integers(0, 3) | json_values,
              "logprobs": st.booleans() | json_values, "top_logprobs": st.integers(-1, 30) | json_values,
              "stream": st.booleans() | json_values})


@st.composite
def bodies(draw) -> bytes:
    kind = draw(st.sampled_from(["chat", "json", "bytes"]))
    if kind == "bytes":
        return draw(st.binary(max_size=200))
    value = draw(chat if kind == "chat" else json_values)
    text = json.dumps(value, ensure_ascii=draw(st.booleans()))
    data = text.encode(draw(st.sampled_from(["utf-8", "utf-8", "utf-16", "utf-32", "latin-1"])), errors="replace")
    cut = draw(st.none() | st.integers(0, len(data)))
    return data if cut is None else data[:cut]


@st.composite
def requests(draw, port: int) -> bytes:
    body = draw(bodies())
    method = draw(st.sampled_from(["POST"] * 6 + ["GET", "PUT", "OPTIONS", "DELETE"]))
    path = draw(st.sampled_from(["/v1/chat/completions"] * 4 + ["/chat/completions", "/v1/models", "/v1/x",
                                                                "/v1/chat/completions?a=1", "//v1/models"]))
    headers = {"Content-Type": draw(st.sampled_from(["application/json"] * 4 + [
        "application/json; charset=utf-8", "text/plain", "APPLICATION/JSON", "application/json; charset=latin-1",
        "", None]))}
    length = draw(st.sampled_from(["right"] * 4 + ["-1", "abc", "", "1 2", "shorter", None]))
    if length == "shorter":
        headers["Content-Length"] = str(max(0, len(body) - 3))
    elif length != "right":
        headers["Content-Length"] = length
    if method not in ("POST", "PUT") and length == "right":
        headers["Content-Length"] = str(len(body))
    host = draw(st.sampled_from([None] * 6 + ["evil.example", f"localhost:{port}", "", "a b"]))
    return request_bytes(port, method, path, body, headers, host)


@pytest.fixture(scope="module")
def server():
    with serving(read_timeout_s=1.0, max_tokens_cap=64) as running:
        yield running


def test_generated_requests_never_get_a_500_and_the_server_keeps_answering(server):
    seen = []

    @settings(max_examples=200, deadline=None, database=None, suppress_health_check=list(HealthCheck))
    @given(data=requests(server.port))
    def check(data):
        status, headers, body = exchange(server.port, data, timeout=5)
        seen.append(status)
        assert 200 <= status < 500, (status, data[:300], body[:300])
        if status >= 400 and body:
            error_of(body)
        followup = exchange(server.port, request_bytes(server.port, "GET", "/v1/models"), timeout=5)
        assert followup[0] == 200

    check()
    assert {200, 400} <= set(seen)  # both paths were reached: answers and refusals


def _depth(value) -> int:
    if isinstance(value, list):
        return 1 + max(map(_depth, value), default=0)
    if isinstance(value, dict):
        return 1 + max(map(_depth, value.values()), default=0)
    return 0


bracket_text = st.text(alphabet='[]{}"\\ax', max_size=12)
nested = st.recursive(st.none() | st.integers() | bracket_text,
                      lambda inner: st.lists(inner, max_size=3) | st.dictionaries(bracket_text, inner, max_size=3),
                      max_leaves=30)


@settings(max_examples=300, deadline=None, database=None)
@given(value=nested, limit=st.integers(0, 8), ascii_only=st.booleans())
def test_the_depth_check_reads_nesting_as_the_parser_does(value, limit, ascii_only):
    """Brackets, quotes and backslashes inside strings do not count; the check agrees with the parsed depth."""
    from focus_eval.adapters.serve_limits import json_too_deep

    assert json_too_deep(json.dumps(value, ensure_ascii=ascii_only), limit) == (_depth(value) > limit)
