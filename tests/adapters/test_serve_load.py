"""``focus-eval serve`` under load and under requests it cannot honour: simultaneous image requests wait their
turn up to the documented queue bound (503 with Retry-After only beyond it), a body trickled byte by byte is cut
at the read deadline, and request fields the server does not read (or habitual ones at values that would change
the answer, or a top_logprobs above the cap) are refused by name before the model is reached. The model is a
light fake (``serve_support.FakeMLLM``); servers listen on 127.0.0.1 and are stopped by each test."""

from __future__ import annotations

import base64
import io
import json
import socket
import threading
import time

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from PIL import Image
from serve_support import FakeMLLM, chat_body, error_of, request_bytes, send, serving, wait_until

from focus_eval.adapters.openai_server import FIELDS, NEUTRAL
from focus_eval.adapters.serve_limits import ServeLimits


class SlowModel(FakeMLLM):
    """A fake whose every call takes ``seconds``, as a real model's batch does."""

    def __init__(self, seconds: float = 0.2):
        super().__init__()
        self.seconds = seconds

    def _called(self, rows: int):
        time.sleep(self.seconds)
        return super()._called(rows)


def _image_body(text: str = "Is it?") -> bytes:
    buffer = io.BytesIO()
    Image.new("RGB", (448, 448), (120, 30, 20)).save(buffer, "PNG")
    url = "data:image/png;base64," + base64.b64encode(buffer.getvalue()).decode()
    return json.dumps({"messages": [{"role": "user", "content": [{"type": "image_url", "image_url": {"url": url}},
                                                                  {"type": "text", "text": text}]}],
                       "logprobs": True, "top_logprobs": 5}).encode()


def _together(server, bodies: list[bytes]) -> list[tuple[int, dict, bytes]]:
    """Send every body at once, each on its own connection; the answers in the order of ``bodies``."""
    answers: list = [None] * len(bodies)
    start = threading.Barrier(len(bodies))

    def one(i: int) -> None:
        start.wait(10)
        answers[i] = send(server, body=bodies[i], timeout=60)

    threads = [threading.Thread(target=one, args=(i,), daemon=True) for i in range(len(bodies))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(90)
    assert not any(thread.is_alive() for thread in threads)
    return answers


def test_simultaneous_image_requests_within_the_queue_bound_are_all_answered():
    assert ServeLimits().max_queue >= 20  # the documented default (docs/SECURITY.md)
    with serving(SlowModel()) as running:
        answers = _together(running, [_image_body(f"image {i}") for i in range(20)])
        assert [status for status, _, _ in answers] == [200] * 20
        assert running.adapter.calls < 20  # they shared batches


def test_beyond_the_queue_bound_exactly_the_excess_is_refused_with_retry_after():
    fake = FakeMLLM()
    fake.hold = threading.Event()
    with serving(fake, max_queue=4) as running:
        results: list = []
        first = threading.Thread(target=lambda: results.append(send(running, body=chat_body("first"), timeout=60)))
        first.start()
        assert fake.entered.wait(10)  # the model is busy: whatever comes now waits or is refused
        late: list = []
        threads = [threading.Thread(target=lambda i=i: late.append(send(running, body=chat_body(f"q{i}"), timeout=60)))
                   for i in range(7)]
        for thread in threads:
            thread.start()
        assert wait_until(lambda: sum(1 for status, _, _ in late if status == 503) == 3)
        assert running.batcher.waiting == 4
        refused = [(headers, body) for status, headers, body in late if status == 503]
        assert all(int(headers["retry-after"]) >= 1 and error_of(body)["code"] == "server_busy"
                   for headers, body in refused)
        fake.hold.set()
        for thread in [first, *threads]:
            thread.join(30)
        assert sorted(status for status, _, _ in results + late) == [200] * 5 + [503] * 3


def test_a_body_trickled_byte_by_byte_is_cut_at_the_read_deadline():
    with serving(read_timeout_s=1.5) as running:
        data = request_bytes(running.port, body=chat_body())
        head_end = data.index(b"\r\n\r\n") + 4
        conn = socket.create_connection(("127.0.0.1", running.port))
        try:
            conn.sendall(data[:head_end])
            started, answer = time.monotonic(), b""
            conn.settimeout(0.25)
            for byte in data[head_end:-1]:  # one byte every 0.25 s: each arrives well within the deadline
                try:
                    conn.sendall(bytes([byte]))
                    answer += conn.recv(65536)
                except socket.timeout:
                    continue
                except OSError:
                    break
                if answer:
                    break
            elapsed = time.monotonic() - started
        finally:
            conn.close()
        assert answer.startswith(b"HTTP/1.1 408") and error_of(answer.partition(b"\r\n\r\n")[2])["code"] == \
            "request_timeout"
        assert elapsed < 4 * 1.5  # the deadline counts from the head, not from the last byte
        assert running.adapter.calls == 0 and send(running, body=chat_body())[0] == 200


def _body(**fields) -> bytes:
    return json.dumps({"messages": [{"role": "user", "content": "Is it?"}], **fields}).encode()


@pytest.fixture(scope="module")
def server():
    with serving() as running:
        yield running


@pytest.mark.parametrize("fields, named", [
    ({"top_logprobs": 10 ** 9, "logprobs": True}, "top_logprobs 1000000000 is above this server's cap of 1000"),
    ({"top_logprobs": 1001, "logprobs": True}, "--max-top-logprobs"),
    ({"temprature": 0}, "field 'temprature'"),
    ({"functions": [{"name": "f"}]}, "field 'functions'"),
    ({"best_of": 3, "echo": True}, "field 'best_of', 'echo'"),
    ({"top_p": 0.5}, "field 'top_p' = 0.5"),
    ({"logit_bias": {"9": 100}}, "field 'logit_bias'"),
    ({"stop": ["\n"]}, "field 'stop'"),
    ({"response_format": {"type": "json_object"}}, "field 'response_format'"),
    ({"presence_penalty": 1}, "field 'presence_penalty' = 1"),
])
def test_a_field_or_value_the_server_does_not_support_is_refused_by_name(server, fields, named):
    before = server.adapter.calls
    status, _, body = send(server, body=_body(**fields))
    error = error_of(body)
    assert status == 400 and named in error["message"], error
    assert error["code"] in ("unsupported_field", "unsupported_value", "top_logprobs_too_large")
    assert server.adapter.calls == before


@pytest.mark.parametrize("where, request_body, named", [
    ("message", {"messages": [{"role": "user", "content": "Is it?", "name": "x"}]}, "message field 'name'"),
    ("part", {"messages": [{"role": "user", "content": [{"type": "text", "text": "Is it?", "cache": 1}]}]},
     "text part field 'cache'"),
    ("image_url", {"messages": [{"role": "user", "content": [
        {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA", "fetch": "http://x"}}]}]},
     "image_url field 'fetch'"),
    ("detail", {"messages": [{"role": "user", "content": [
        {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA", "detail": "ultra"}}]}]},
     "detail must be auto, low or high"),
])
def test_unknown_keys_inside_the_turn_are_refused_by_name(server, where, request_body, named):
    status, _, body = send(server, body=json.dumps(request_body).encode())
    assert status == 400 and named in error_of(body)["message"]


def test_habitual_fields_at_their_neutral_values_are_answered(server):
    neutral = {"top_p": 1, "presence_penalty": 0, "frequency_penalty": 0.0, "seed": 7, "user": "me", "stop": None,
               "logit_bias": {}, "response_format": {"type": "text"}, "stream": False, "n": 1, "temperature": 0,
               "max_completion_tokens": 3, "logprobs": True, "top_logprobs": 1000, "tools": [], "tool_choice": "none"}
    status, _, body = send(server, body=_body(**neutral))
    assert status == 200 and len(json.loads(body)["choices"][0]["logprobs"]["content"][0]["top_logprobs"]) <= 1000
    image = json.loads(_image_body())
    image["messages"][0]["content"][0]["image_url"]["detail"] = "high"
    assert send(server, body=json.dumps(image).encode())[0] == 200


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(name=st.text(min_size=1, max_size=80).filter(lambda n: n not in FIELDS and n not in NEUTRAL),
       value=st.none() | st.booleans() | st.integers() | st.text(max_size=20) | st.lists(st.integers(), max_size=3))
def test_any_other_field_is_refused_naming_it(server, name, value):
    status, _, body = send(server, body=_body(**{name: value}))
    error = error_of(body)
    assert status == 400 and error["code"] == "unsupported_field" and repr(name)[:60] in error["message"]
