"""The openai_chat client against hostile and failing endpoints (local HTTP servers on 127.0.0.1): a redirect to
another host never carries the API key there; a key quoted in an error body never reaches a file or the console;
a server that trickles its answer is cut at the whole-request deadline; log-probabilities outside the possible
range fail the image with a reason; after an outage the same command asks exactly the failed images again."""

from __future__ import annotations

import json
import math
import socket
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import numpy as np
import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from PIL import Image

from focus_eval.adapters.mllm_interface import is_retryable
from focus_eval.adapters.openai_chat import (Endpoint, FailedAnswers, InvalidAnswer, RequestFailed, RetryPolicy,
                                             letter_answer, read_answer, yes_no_answer)
from focus_eval.errors import FocusError
from focus_eval.redact import forget_secret, redact

KEY = "focus-test-key-7f3a9c2e1b5d4a60"
TOP = [{"token": "Yes", "logprob": -0.2}, {"token": " No", "logprob": -1.8}]


def completion(top=None, text="Yes") -> dict:
    top = TOP if top is None else top
    return {"model": "fake-4o", "choices": [{"index": 0, "message": {"role": "assistant", "content": text},
                                             "logprobs": {"content": [{**top[0], "top_logprobs": top}]}}]}


class Server(ThreadingHTTPServer):
    """Records every request (path and headers) and answers it with ``behave(handler)``."""

    daemon_threads = True

    def __init__(self, behave):
        self.behave, self.seen, self.lock = behave, [], threading.Lock()
        super().__init__(("127.0.0.1", 0), _Handler)
        threading.Thread(target=self.serve_forever, daemon=True).start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}/v1"


class _Handler(BaseHTTPRequestHandler):
    def log_message(self, *args):
        pass

    def do_POST(self):  # noqa: N802
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        with self.server.lock:
            self.server.seen.append({"path": self.path, "headers": dict(self.headers), "body": body})
        self.server.behave(self)

    do_GET = do_POST  # noqa: N815  (a client that turned a redirected POST into a GET is seen too)


def reply(handler, status: int, body, headers=()) -> None:
    data = body if isinstance(body, bytes) else json.dumps(body).encode()
    handler.send_response(status)
    for name, value in headers:
        handler.send_header(name, value)
    handler.send_header("Content-Type", "application/json")
    handler.send_header("Content-Length", str(len(data)))
    handler.end_headers()
    handler.wfile.write(data)


@pytest.fixture
def serve():
    servers = []

    def start(behave):
        servers.append(Server(behave))
        return servers[-1]

    yield start
    for server in servers:
        server.shutdown()
        server.server_close()


@pytest.fixture(autouse=True)
def _forget_key():
    yield
    forget_secret(KEY)


def endpoint(url, key=KEY, timeout=10.0, attempts=1) -> Endpoint:
    return Endpoint(url, key, timeout, RetryPolicy(attempts, 60.0, 0.01), sleep=lambda s: None)


def remote(url, monkeypatch, **settings):
    from focus_eval.adapters import load_adapter
    from focus_eval.presets import load_preset

    monkeypatch.setenv("HOSTILE_KEY", KEY)
    return load_adapter(load_preset("openai_chat", {"base_url": url, "model": "fake-4o", "api_key_env": "HOSTILE_KEY",
                                                    "backoff_seconds": 0.01, **settings}))


def images(n):
    rng = np.random.default_rng(0)
    return [Image.fromarray(rng.integers(0, 255, (16, 16, 3), dtype=np.uint8)) for _ in range(n)]


# ----- redirects


@pytest.mark.parametrize("status", [301, 302, 307, 308])
def test_a_redirect_to_another_host_is_refused_and_the_key_never_reaches_it(serve, status):
    other = serve(lambda h: reply(h, 200, completion()))
    first = serve(lambda h: reply(h, status, {}, [("Location", other.url + "/chat/completions")]))
    with pytest.raises(RequestFailed) as failed:
        endpoint(first.url, attempts=3).post("/chat/completions", {"model": "m"})
    assert other.seen == []  # never contacted: neither the key nor the body went there
    assert first.seen[0]["headers"]["Authorization"] == f"Bearer {KEY}" and len(first.seen) == 1
    here, there = first.server_address[1], other.server_address[1]
    assert f"127.0.0.1:{here}" in failed.value.reason and f"127.0.0.1:{there}" in failed.value.reason
    assert not failed.value.retry and "follows no redirects" in failed.value.reason and KEY not in str(failed.value)


def test_a_redirect_on_the_same_host_is_refused_too(serve):
    same = serve(lambda h: reply(h, 307, {}, [("Location", "/v2/chat/completions")]))
    with pytest.raises(RequestFailed, match="HTTP 307 redirect from http://127.0.0.1:.* follows no redirects"):
        endpoint(same.url).post("/chat/completions", {})
    assert [s["path"] for s in same.seen] == ["/v1/chat/completions"]


# ----- secrets in messages


def test_redact_masks_the_registered_key_tokens_and_url_credentials():
    from focus_eval.redact import register_secret

    register_secret(KEY)
    text = redact(f"bad key {KEY}; Authorization: Bearer abc123def456; https://me:pw@h/x?api_key=zzzz1234")
    assert KEY not in text and "abc123def456" not in text and "me:pw" not in text and "zzzz1234" not in text
    assert redact("sk-proj-abcdefgh12345 expired") == "*** expired"
    assert redact("other wordsmith", secrets=["wordsmith"]) == "other ***"
    assert redact("short abc", secrets=["abc"]) == "short abc"  # too short to be told from ordinary words
    assert redact("plain message: HTTP 500") == "plain message: HTTP 500"


def _preset_file(folder: Path, url: str, **settings) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "hostile.yaml"
    path.write_text(yaml.safe_dump({"name": "hostile", "family": "mllm", "domain": "medical", "adapter": "openai_chat",
                                    "methods": ["prompt"], "preprocessing": {"size": 64},
                                    "settings": {"base_url": url, "model": "fake-4o", "api_key_env": "HOSTILE_KEY",
                                                 "max_attempts": 1, "max_concurrency": 1, **settings}}))
    return path


TEST_ONLY = ("--no-val-scores",)


def _run(preset: Path, data: Path, out: Path, limit: int = 4, *extra: str) -> int:
    from focus_eval.cli import main

    return main(["--model", str(preset), "--tasks", "dr_synth_desktop", "--data-root", str(data), "--output-path",
                 str(out), "--limit", str(limit), "--n-boot", "10", "--no-progress", "--num-workers", "0",
                 "--batch-size", "4", *extra])


@pytest.fixture(scope="module")
def data_root(tmp_path_factory):
    from focus_eval.synth.datasets import write_synthetic

    root = tmp_path_factory.mktemp("hostile") / "data"
    write_synthetic(root, n=20, seed=1)
    return root


@pytest.mark.parametrize("status", [400, 503])
def test_a_key_quoted_in_an_error_body_never_reaches_a_file_or_the_console(serve, data_root, tmp_path, monkeypatch,
                                                                           capsys, status):
    # the endpoint echoes the key in its error message, in its own header line and in the JSON "param"
    body = {"error": {"message": f"Incorrect API key provided: {KEY}. Header was 'Bearer {KEY}'", "param": KEY}}
    api = serve(lambda h: reply(h, status, body))
    monkeypatch.setenv("HOSTILE_KEY", KEY)
    code = _run(_preset_file(tmp_path / "presets", api.url), data_root, tmp_path / "out")
    captured = capsys.readouterr()
    assert code == 1 and api.seen and all(s["headers"]["Authorization"] == f"Bearer {KEY}" for s in api.seen)
    files = [p for p in (tmp_path / "out").rglob("*") if p.is_file()]
    written = {p: p.read_bytes().decode("utf-8", "replace") for p in files}
    assert any("Incorrect API key provided: ***" in text for text in written.values())  # the reason is kept
    for text in [*written.values(), captured.out, captured.err]:
        assert KEY not in text and KEY[:16] not in text and KEY[-12:] not in text
    assert "Incorrect API key provided: ***" in captured.err or status == 400


# ----- the whole-request deadline


def _trickle(handler, head_first: bool) -> None:
    """One byte every 0.2 s (headers first, or the status line itself), for at most 12 s."""
    data = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 5000\r\n\r\n" + b" " * 5000
    start = 0
    if head_first:
        start = data.index(b"\r\n\r\n") + 4
        handler.wfile.write(data[:start])
        handler.wfile.flush()
    for i in range(start, start + 60):
        try:
            handler.wfile.write(data[i:i + 1])
            handler.wfile.flush()
        except OSError:  # the client hung up: done
            return
        time.sleep(0.2)


@pytest.mark.parametrize("head_first", [True, False])
def test_a_trickling_server_is_cut_at_the_deadline_as_a_transient_failure(serve, head_first):
    api = serve(lambda h: _trickle(h, head_first))
    start = time.monotonic()
    with pytest.raises(RequestFailed, match=r"no complete answer within 1\.5 s") as failed:
        endpoint(api.url, timeout=1.5).post("/chat/completions", {})
    assert time.monotonic() - start < 4 and failed.value.retry  # each read got a byte well within 1.5 s


def test_a_refused_or_dropped_connection_is_transient(serve):
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    with pytest.raises(RequestFailed, match="connection failed") as refused:
        endpoint(f"http://127.0.0.1:{port}/v1").post("/chat/completions", {})
    dropped = serve(lambda h: h.connection.shutdown(socket.SHUT_RDWR))
    with pytest.raises(RequestFailed, match="connection failed") as cut:
        endpoint(dropped.url).post("/chat/completions", {})
    assert refused.value.retry and cut.value.retry


# ----- log-probabilities


@pytest.mark.parametrize("bad", [0.5, float("nan"), 1e308, float("inf"), "-0.1", True, 10 ** 400])
def test_impossible_log_probabilities_fail_the_image_with_the_reason(serve, monkeypatch, bad):
    top = [{"token": "Yes", "logprob": bad}, {"token": " No", "logprob": -1.0}]
    api = serve(lambda h: reply(h, 200, json.dumps(completion(top)).encode()))
    adapter = remote(api.url, monkeypatch, max_attempts=3)
    (answers,) = adapter.score_and_generate_multi(images(1), [["Is it?"]])
    assert isinstance(answers, FailedAnswers) and "is not a log-probability" in answers.error
    assert not is_retryable(answers.error) and len(api.seen) == 1  # permanent: not asked again
    (letters,) = adapter.score_options_and_generate_multi(images(1), [["Which?"]], [[["Yes", "No"]]])
    assert isinstance(letters, FailedAnswers)


def test_extreme_but_possible_log_probabilities_give_probabilities_in_range():
    ruled_out = {"logprobs": {"content": [{"token": "Yes", "logprob": -0.1, "top_logprobs": [
        {"token": "Yes", "logprob": -0.1}, {"token": "No", "logprob": float("-inf")}]}]}, "message": {"content": "Yes"}}
    answer = read_answer({"choices": [ruled_out]}, yes_no_answer)  # -inf: probability 0, as an unlisted token
    assert answer["p_no"] == 0.0 and answer["score_norm"] == 1.0 and answer["scored_by"] == "logprobs"
    answer = yes_no_answer([("Yes", 0.0), ("No", -1e308)], "Yes")
    assert answer["p_yes"] == 1.0 and answer["p_no"] == 0.0 and answer["score_norm"] == 1.0
    answer = yes_no_answer([("Yes", -1e308), ("No", 5e-7)], "No")  # within the tolerance: read as 0
    assert answer["score_norm"] == 0.0 and answer["p_no"] == 1.0
    letters = letter_answer([("A", -1e-9), ("B", -1e-9), ("C", -1e-9)], "A", "ABC")
    assert letters["letter_mass"] <= 1.0 and math.isclose(sum(letters["letters"].values()), 1.0)


JSON = st.recursive(st.none() | st.booleans() | st.integers() | st.floats(allow_nan=True) | st.text(max_size=8),
                    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
                    max_leaves=20)
LOGPROB = (st.floats(allow_nan=True, allow_infinity=True) | st.integers(min_value=-10 ** 400, max_value=10 ** 400)
           | st.none() | st.booleans() | st.text(max_size=4) | st.sampled_from([0.0, -0.0, 1e-7, -1e-300, -1e308]))
TOKEN = st.sampled_from(["Yes", " yes", "No", "\nno", "A", " B", "C", "maybe"]) | st.none() | st.integers()


def _structured(values, tokens, text):
    top = [{"token": t, "logprob": v} for t, v in zip(tokens, values)]
    return {"choices": [{"message": {"content": text}, "logprobs": {"content": [
        {"token": tokens[0] if tokens else "Yes", "logprob": values[0] if values else -1, "top_logprobs": top}]}}]}


def _in_range(value) -> bool:
    return value is None or (isinstance(value, float) and 0.0 <= value <= 1.0)


@settings(max_examples=300, deadline=None)
@given(body=JSON | st.builds(_structured, st.lists(LOGPROB, max_size=6), st.lists(TOKEN, max_size=6),
                             JSON | st.text(max_size=20)))
def test_the_answer_reader_raises_only_invalid_answer_and_keeps_probabilities_in_range(body):
    for read in (yes_no_answer, lambda top, text: letter_answer(top, text, "ABC")):
        try:
            answer = read_answer(body, read)
        except InvalidAnswer:
            continue
        values = [answer.get("p_yes"), answer.get("p_no"), answer.get("score_norm"), answer.get("letter_mass"),
                  *(answer.get("letters") or {}).values()]
        assert all(_in_range(v) for v in values), answer


# ----- outages: transient failures are asked again by the next run


class Outage:
    """Answers 200 for the first ``healthy`` requests, then as ``mode`` says: 503, or the connection dropped."""

    def __init__(self, healthy: int):
        self.healthy, self.mode, self.count = healthy, "up", 0

    def __call__(self, handler) -> None:
        self.count += 1
        if self.mode == "up" or self.count <= self.healthy:
            reply(handler, 200, completion())
        elif self.mode == "503":
            reply(handler, 503, {"error": {"message": "overloaded"}})
        else:
            handler.connection.shutdown(socket.SHUT_RDWR)


@pytest.mark.slow
def test_after_an_outage_the_same_command_asks_exactly_the_failed_images_again(serve, data_root, tmp_path,
                                                                               monkeypatch, capsys):
    from focus_eval.results.schema import read_jsonl

    # four test images and no validation rows: the requests counted below are the test images'
    outage = Outage(healthy=2)
    outage.mode = "503"
    api = serve(outage)
    monkeypatch.setenv("HOSTILE_KEY", KEY)
    preset, out = _preset_file(tmp_path / "presets", api.url), tmp_path / "out"
    assert _run(preset, data_root, out, 4, *TEST_ONLY) == 1 and len(api.seen) == 4
    assert "run the same command again to retry them" in capsys.readouterr().err
    assert not list(out.rglob("dr_synth_desktop.prompt.jsonl"))  # the unit is not finished
    parts = [json.loads(line) for p in out.rglob(".parts/*.jsonl") for line in p.read_text().splitlines()]
    assert sorted(is_retryable(p.get("error")) for p in parts) == [False, False, True, True]
    answered = {s["body"] for s in api.seen[:2]}

    outage.mode = "closed"  # down differently: the connection is dropped
    assert _run(preset, data_root, out, 4, *TEST_ONLY) == 1 and len(api.seen) == 6  # the two failed images only
    outage.mode = "up"
    assert _run(preset, data_root, out, 4, *TEST_ONLY) == 0 and len(api.seen) == 8
    assert {s["body"] for s in api.seen[6:]}.isdisjoint(answered)  # answered images are not asked again
    samples = read_jsonl(next(out.rglob("dr_synth_desktop.prompt.jsonl")))
    assert len(samples) == 4 and all(s["error"] is None and s["p_yes"] is not None for s in samples)
    assert _run(preset, data_root, out, 4, *TEST_ONLY) == 0 and len(api.seen) == 8  # done now: nothing asked


# ----- every part of a try under its deadline, and the real cause recorded


@pytest.fixture
def unaccepting_port():
    """A port on 127.0.0.1 whose accept queue is full: a new connection's handshake is never answered, as with
    a host whose packets are dropped."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(0)
    port, fillers = listener.getsockname()[1], []
    for _ in range(4):
        filler = socket.socket()
        filler.setblocking(False)
        try:
            filler.connect(("127.0.0.1", port))
        except BlockingIOError:
            pass
        fillers.append(filler)
    yield port
    for sock in [*fillers, listener]:
        sock.close()


def test_connecting_gets_only_the_time_left_whatever_addresses_the_host_has(unaccepting_port, monkeypatch):
    # a host name with four addresses, none answering: each used to get the whole timeout (4 x 1.5 s)
    real = socket.getaddrinfo
    four = real("127.0.0.1", unaccepting_port, 0, socket.SOCK_STREAM)[:1] * 4
    monkeypatch.setattr(socket, "getaddrinfo",
                        lambda host, *args, **kw: four if host == "four.fundus.test" else real(host, *args, **kw))
    for name in ("http_proxy", "HTTP_PROXY", "all_proxy", "ALL_PROXY"):
        monkeypatch.delenv(name, raising=False)
    started = time.monotonic()
    with pytest.raises(RequestFailed, match=r"no complete answer within 1\.5 s") as failed:
        endpoint(f"http://four.fundus.test:{unaccepting_port}/v1", timeout=1.5).post("/chat/completions", {})
    assert time.monotonic() - started < 2 * 1.5 and failed.value.retry


@pytest.mark.parametrize("location", ["http://[::1", "http://evil.example:99999999/x", "http://[zz]/"])
def test_a_redirect_to_no_url_fails_the_request_naming_it(serve, monkeypatch, location):
    api = serve(lambda h: reply(h, 302, {}, [("Location", location)]))
    with pytest.raises(RequestFailed, match="HTTP 302 redirect from .* to an address that is no URL") as failed:
        endpoint(api.url).post("/chat/completions", {})
    assert not failed.value.retry
    (answers,) = remote(api.url, monkeypatch).score_and_generate_multi(images(1), [["Is it?"]])
    assert isinstance(answers, FailedAnswers) and "HTTP 302 redirect" in answers.error  # recorded, not raised


@pytest.mark.parametrize("key", [KEY + "\r\nX-Injected: 1", KEY + "\n", "focus-test-key-\u00e9\u00e9\u00e9-0123456789"])
def test_an_api_key_a_header_cannot_carry_is_refused_when_the_model_loads(serve, monkeypatch, key):
    from focus_eval.adapters import load_adapter
    from focus_eval.presets import load_preset

    api = serve(lambda h: reply(h, 200, completion()))
    monkeypatch.setenv("BROKEN_KEY", key)
    with pytest.raises(FocusError, match=r"the API key in \$BROKEN_KEY holds a line break") as refused:
        load_adapter(load_preset("openai_chat", {"base_url": api.url, "model": "m", "api_key_env": "BROKEN_KEY"}))
    assert key.strip() not in str(refused.value) and api.seen == []
    forget_secret(key)


HEADER_LINES = st.sampled_from([
    "Location: http://[::1", "Location: http://a:99999999/", "Location: file:.", "Location: ", "Retry-After: 1e400",
    "Retry-After: nan", "Content-Length: -1", "Content-Length: abc", "Content-Length: 99999999999999999999",
    "Transfer-Encoding: chunked", "Content-Type: text/html", "Content-Encoding: gzip", "X: \u00ff\u00fe",
]) | st.text(alphabet=st.characters(min_codepoint=32, max_codepoint=255), max_size=40)
STATUS_LINES = st.sampled_from(["HTTP/1.1 200 OK", "HTTP/1.1 302 Found", "HTTP/1.1 503 Busy", "HTTP/1.0 307 x",
                                "HTTP/1.1 100 Continue", "HTTP/1.1 99999 x", "HTTP/2 200", "ICY 200 OK", ""])


class RawServer:
    """One canned answer (raw bytes) for every connection, after reading the request."""

    def __init__(self):
        self.answer, self.stopped = b"", False
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self):
        while True:
            try:
                conn, _ = self.listener.accept()
            except OSError:
                return
            if self.stopped:
                conn.close()
                return
            with conn:
                conn.settimeout(2)
                try:
                    conn.recv(1 << 20)
                    conn.sendall(self.answer)
                    conn.shutdown(socket.SHUT_WR)
                except OSError:
                    pass


@pytest.fixture(scope="module")
def raw_server():
    server = RawServer()
    yield server
    server.stopped = True
    socket.create_connection(("127.0.0.1", server.port), timeout=5).close()  # wakes the accept loop to end
    server.thread.join(10)
    server.listener.close()
    assert not server.thread.is_alive()


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(status=STATUS_LINES, headers=st.lists(HEADER_LINES, max_size=4),
       body=st.sampled_from([b"", b"{}", b"[1]", b"\xff\xfe", b'{"error": {"message": 1}}', b"5\r\nhello\r\n0\r\n\r\n"])
       | st.binary(max_size=64))
def test_any_answer_bytes_end_in_json_or_a_request_failure(raw_server, status, headers, body):
    raw_server.answer = ("\r\n".join([status, *headers]) + "\r\n\r\n").encode("latin-1") + body
    try:
        answer = endpoint(f"http://127.0.0.1:{raw_server.port}/v1", timeout=5).post("/chat/completions", {})
    except RequestFailed as exc:
        assert "\n" not in exc.reason and KEY not in exc.reason
    else:
        assert isinstance(answer, (dict, list, str, int, float, bool)) or answer is None
