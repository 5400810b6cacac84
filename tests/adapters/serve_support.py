"""A light ``ServedMLLM`` that counts its calls (and can be held inside one), ``focus-eval serve``'s HTTP layer
over it in a background thread, and raw-socket helpers: for the tests of the server's HTTP side, where the
model's numbers do not matter."""

from __future__ import annotations

import contextlib
import json
import socket
import threading
import time

VOCAB = 12


class CountingTokenizer:
    def decode(self, ids, **kwargs):
        return "".join(f"t{i}" for i in ids)


class FakeMLLM:
    """Answers every question "Yes" with fixed first-token scores; ``calls`` counts the model calls, and while
    ``hold`` is set (a threading.Event that is not set) each call waits on it after setting ``entered``."""

    max_new_tokens = 5
    device = "cpu"

    def __init__(self, fail: Exception | None = None, vocab: int = VOCAB):
        self.tokenizer, self.vocab = CountingTokenizer(), vocab
        self.calls, self.lock = 0, threading.Lock()
        self.hold: threading.Event | None = None
        self.entered = threading.Event()
        self.fail = fail

    def _called(self, rows: int):
        import torch

        with self.lock:
            self.calls += 1
        self.entered.set()
        if self.hold is not None:
            self.hold.wait(timeout=30)
        if self.fail is not None:
            raise self.fail
        return torch.arange(self.vocab, dtype=torch.float32).repeat(rows, 1) / self.vocab

    def score_text_and_generate(self, prompts, max_new_tokens=None, scores=None):
        logits = self._called(len(prompts))
        rows = scores(logits) if scores else [{} for _ in prompts]
        return [{**row, "text": "Yes"} for row in rows]

    def score_and_generate_multi(self, images, prompts_per_image, max_new_tokens=None, scores=None):
        logits = self._called(sum(len(p) for p in prompts_per_image))
        rows = iter(scores(logits) if scores else [{} for _ in range(len(logits))])
        return [[{**next(rows), "text": "Yes"} for _ in prompts] for prompts in prompts_per_image]

    def score_options_and_generate_multi(self, images, prompts_per_image, letters_per_prompt, max_new_tokens=None):
        raise NotImplementedError("serve does not ask multiple-choice questions")

    def score_options_and_generate_text(self, prompts, letters_per_prompt, max_new_tokens=None):
        raise NotImplementedError("serve does not ask multiple-choice questions")


@contextlib.contextmanager
def serving(adapter=None, **options):
    """``ChatServer`` over ``adapter`` (a new FakeMLLM by default) on 127.0.0.1, a free port, in a thread;
    ``options``: ServeLimits fields and ChatServer keywords. Stopped on leaving."""
    from focus_eval.adapters.openai_server import ChatServer
    from focus_eval.adapters.serve_limits import ServeLimits

    fields = set(ServeLimits.__dataclass_fields__)
    limits = ServeLimits(**{k: v for k, v in options.items() if k in fields})
    rest = {k: v for k, v in options.items() if k not in fields}
    server = ChatServer(adapter or FakeMLLM(), "fake-mllm", "127.0.0.1", 0, limits=limits, **rest)
    server.start()
    try:
        yield server
    finally:
        if server.adapter.hold is not None:
            server.adapter.hold.set()
        server.shutdown()
        server.server_close()


def chat_body(text="Is this a fundus?", **fields) -> bytes:
    return json.dumps({"model": "fake-mllm", "messages": [{"role": "user", "content": text}], **fields}).encode()


def request_bytes(port: int, method="POST", path="/v1/chat/completions", body: bytes = b"", headers=None,
                  host=None) -> bytes:
    """One HTTP/1.1 request as bytes (``Connection: close``); ``headers`` may override or drop (None) any."""
    fields = {"Host": host or f"127.0.0.1:{port}", "Connection": "close"}
    if method in ("POST", "PUT", "PATCH"):
        fields.update({"Content-Type": "application/json", "Content-Length": str(len(body))})
    fields.update(headers or {})
    head = "".join(f"{k}: {v}\r\n" for k, v in fields.items() if v is not None)
    return f"{method} {path} HTTP/1.1\r\n{head}\r\n".encode("latin-1") + body


def exchange(port: int, data: bytes, timeout: float = 10.0) -> tuple[int, dict, bytes]:
    """Send ``data`` on a new connection and read to the end: (status, headers, body); status 0 when the
    server closed without an answer."""
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as conn:
        conn.sendall(data)
        chunks = []
        while True:
            chunk = conn.recv(65536)
            if not chunk:
                break
            chunks.append(chunk)
    return parse_response(b"".join(chunks))


def parse_response(raw: bytes) -> tuple[int, dict, bytes]:
    if not raw:
        return 0, {}, b""
    head, _, body = raw.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    headers = {}
    for line in lines[1:]:
        name, _, value = line.partition(":")
        headers[name.strip().lower()] = value.strip()
    return int(lines[0].split(" ")[1]), headers, body


def send(server, method="POST", path="/v1/chat/completions", body: bytes = b"", headers=None, host=None,
         timeout: float = 10.0) -> tuple[int, dict, bytes]:
    return exchange(server.port, request_bytes(server.port, method, path, body, headers, host), timeout)


def error_of(body: bytes) -> dict:
    """The JSON error object of an error answer (fails the test when the body is not that shape)."""
    error = json.loads(body)["error"]
    assert set(error) == {"message", "type", "code"} and all(isinstance(v, str) for v in error.values()), error
    assert "Traceback" not in error["message"]
    return error


def wait_until(condition, timeout: float = 10.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.01)
    return condition()
