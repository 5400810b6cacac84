"""A small OpenAI-compatible HTTP server over one loaded in-process MLLM (``focus-eval serve``): ``GET /v1/models``
and ``POST /v1/chat/completions`` with one user turn of text and at most one inline image, greedy decoding, and
the first answer token's log-probabilities.

Requests that arrive together are answered in one batched call of the adapter (grouped by answer length and
by whether they hold an image), so several evaluation processes can share one model. The turn is rendered as
the in-process adapter renders [image, prompt] (or the prompt alone; no system turn), so the numbers equal an
in-process run's. ``top_logprobs`` may exceed OpenAI's limit of 20 (an extension, for exact scores of tokens
outside the top 20; more than the vocabulary lists all of it). ``logprobs.content`` lists the first answer
token only, the one focus-eval reads.
"""

from __future__ import annotations

import base64
import binascii
import json
import queue
import threading
import time
import uuid
from concurrent.futures import Future
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from focus_eval.errors import DataError, FocusError

# the longest a request waits for others to share its batch
BATCH_WINDOW_S = 0.005


class BadRequest(Exception):
    """A request the server refuses: HTTP ``status`` and an OpenAI-style error ``code``."""

    def __init__(self, message: str, status: int = 400, code: str = "invalid_request_error"):
        super().__init__(message)
        self.message, self.status, self.code = message, status, code


@dataclass
class Ask:
    """One chat-completion request as the model sees it."""

    image: Any  # None: a text-only turn
    prompt: str
    max_tokens: int
    logprobs: bool
    top_logprobs: int


def decode_image(url: str):
    """A PIL image (RGB) from a base64 data URL, decoded as every image file is (``open_image``: EXIF
    orientation applied); the server fetches nothing."""
    from focus_eval.data.images import open_image

    if not isinstance(url, str) or not url.startswith("data:") or ";base64," not in url:
        raise BadRequest("image_url must be a base64 data URL (data:image/png;base64,...); this server fetches "
                         "nothing")
    try:
        return open_image(base64.b64decode(url.split(";base64,", 1)[1], validate=True))
    except (binascii.Error, ValueError, DataError) as exc:
        raise BadRequest(f"image_url: not a readable image ({exc})") from None


def _int_field(body: dict, key: str, default: int, lowest: int) -> int:
    value = body.get(key, default)
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int) or value < lowest:
        raise BadRequest(f"{key} must be a whole number of at least {lowest}, got {value!r}")
    return value


def parse_request(body: Any, served: str, default_tokens: int) -> Ask:
    """The one user turn [image, text] of a chat-completions request; anything this server cannot honour
    exactly (sampling, several turns or images, streaming) is a BadRequest naming it."""
    if not isinstance(body, dict):
        raise BadRequest("the request body must be a JSON object")
    if body.get("model") not in (None, served):
        raise BadRequest(f"model {body.get('model')!r} is not served here; this server serves {served!r}", 404,
                         "model_not_found")
    if body.get("stream"):
        raise BadRequest("stream is not supported")
    if body.get("temperature", 0) not in (0, 0.0, None) or body.get("n", 1) not in (1, None):
        raise BadRequest("only greedy answers are served: temperature 0 and n 1")
    messages = body.get("messages")
    if not isinstance(messages, list) or len(messages) != 1 or not isinstance(messages[0], dict) \
            or messages[0].get("role") != "user":
        raise BadRequest("messages must hold exactly one user turn (no system turn, no history)")
    content = messages[0].get("content")
    parts = [{"type": "text", "text": content}] if isinstance(content, str) else content
    if not isinstance(parts, list) or not all(isinstance(p, dict) for p in parts):
        raise BadRequest("the user turn's content must be text or a list of parts")
    images = [p for p in parts if p.get("type") == "image_url"]
    texts = [p.get("text") for p in parts if p.get("type") == "text"]
    if len(images) > 1 or len(images) + len(texts) != len(parts) or not all(isinstance(t, str) for t in texts):
        raise BadRequest("the user turn must hold text parts and at most one image_url part")
    url = images[0].get("image_url") if images else None
    image = decode_image(url.get("url") if isinstance(url, dict) else url) if images else None
    tokens = _int_field(body, "max_completion_tokens", _int_field(body, "max_tokens", default_tokens, 1), 1)
    logprobs = body.get("logprobs") or False
    if not isinstance(logprobs, bool):
        raise BadRequest("logprobs must be true or false")
    top = _int_field(body, "top_logprobs", 0, 0)
    if top and not logprobs:
        raise BadRequest("top_logprobs needs logprobs: true")
    return Ask(image, "\n".join(texts), tokens, logprobs, top)


class Batcher:
    """One thread owns the model: it takes every request waiting (up to ``max_batch``), answers those of one
    answer length in one adapter call and hands each request its own answer."""

    def __init__(self, adapter, max_batch: int = 16, window_s: float = BATCH_WINDOW_S):
        self.adapter, self.max_batch, self.window_s = adapter, max(1, int(max_batch)), window_s
        self.pending: queue.Queue = queue.Queue()
        self.thread = threading.Thread(target=self._loop, name="focus-eval-serve-model", daemon=True)
        self.thread.start()

    def submit(self, ask: Ask) -> Future:
        future: Future = Future()
        self.pending.put((ask, future))
        return future

    def _take(self) -> list:
        batch = [self.pending.get()]
        deadline = time.monotonic() + self.window_s
        while len(batch) < self.max_batch:
            try:
                batch.append(self.pending.get(timeout=max(0.0, deadline - time.monotonic())))
            except queue.Empty:
                break
        return batch

    def _loop(self) -> None:
        while True:
            batch = self._take()
            for length, text_only in sorted({(ask.max_tokens, ask.image is None) for ask, _ in batch}):
                group = [(ask, future) for ask, future in batch
                         if ask.max_tokens == length and (ask.image is None) == text_only]
                try:
                    answers = self._answer([ask for ask, _ in group], length, text_only)
                except Exception as exc:  # noqa: BLE001 - every waiting request must hear why
                    for _, future in group:
                        future.set_exception(exc)
                    continue
                for (_, future), answer in zip(group, answers):
                    future.set_result(answer)

    def _answer(self, asks: list[Ask], length: int, text_only: bool) -> list[dict[str, Any]]:
        import torch

        k = max(1, max(ask.top_logprobs for ask in asks))

        def top_tokens(logits):
            # a request for more than the vocabulary gets all of it
            values, ids = torch.topk(torch.log_softmax(logits.float(), dim=-1), min(k, logits.shape[-1]), dim=-1)
            return [{"top": list(zip(row_ids, row_values))} for row_ids, row_values in
                    zip(ids.tolist(), values.tolist())]

        if text_only:  # the scorer's text-only rows, as its knowledge-prompt questions are asked
            return self.adapter.score_text_and_generate([ask.prompt for ask in asks], length, scores=top_tokens)
        rows = self.adapter.score_and_generate_multi([ask.image for ask in asks], [[ask.prompt] for ask in asks],
                                                     max_new_tokens=length, scores=top_tokens)
        return [row[0] for row in rows]


def completion(ask: Ask, answer: dict[str, Any], served: str, tokenizer) -> dict[str, Any]:
    """The chat.completion object of one answered request."""

    def entry(token_id: int, logprob: float) -> dict[str, Any]:
        text = tokenizer.decode([token_id], skip_special_tokens=False, clean_up_tokenization_spaces=False)
        return {"token": text, "logprob": float(logprob), "bytes": list(text.encode("utf-8"))}

    logprobs = None
    if ask.logprobs:
        first = entry(*answer["top"][0])
        first["top_logprobs"] = [entry(i, v) for i, v in answer["top"][:ask.top_logprobs]]
        logprobs = {"content": [first]}
    return {"id": f"chatcmpl-{uuid.uuid4().hex}", "object": "chat.completion", "created": int(time.time()),
            "model": served, "choices": [{"index": 0, "message": {"role": "assistant", "content": answer["text"]},
                                          "logprobs": logprobs, "finish_reason": "stop"}]}


class ChatServer(ThreadingHTTPServer):
    """The HTTP server: one handler thread per connection, one model thread (``Batcher``)."""

    daemon_threads = True

    def __init__(self, adapter, served: str, host: str = "127.0.0.1", port: int = 8000, max_batch: int = 16):
        if not all(hasattr(adapter, name) for name in ("score_and_generate_multi", "tokenizer")):
            raise FocusError(f"model {served!r}: serve needs an in-process multimodal LLM (an hf_mllm preset)")
        self.adapter, self.served = adapter, served
        self.batcher = Batcher(adapter, max_batch)
        super().__init__((host, port), _Handler)

    @property
    def url(self) -> str:
        host, port = self.server_address[:2]
        return f"http://{host}:{port}/v1"


class _Handler(BaseHTTPRequestHandler):
    server: ChatServer
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - the base class's name
        """Quiet: an evaluation sends thousands of requests."""

    def _send(self, status: int, payload: dict) -> None:
        data = json.dumps(payload).encode("utf-8")
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _error(self, status: int, message: str, code: str) -> None:
        self._send(status, {"error": {"message": message, "type": code, "code": code}})

    def do_GET(self) -> None:  # noqa: N802 - the base class's name
        if self.path.rstrip("/") in ("/v1/models", "/models"):
            self._send(200, {"object": "list", "data": [{"id": self.server.served, "object": "model",
                                                          "created": 0, "owned_by": "focus-eval"}]})
        else:
            self._error(404, f"no route GET {self.path}", "not_found")

    def do_POST(self) -> None:  # noqa: N802 - the base class's name
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length)
        if self.path.rstrip("/") not in ("/v1/chat/completions", "/chat/completions"):
            self._error(404, f"no route POST {self.path}", "not_found")
            return
        served, adapter = self.server.served, self.server.adapter
        try:
            ask = parse_request(json.loads(raw or b"null"), served, adapter.max_new_tokens)
            answer = self.server.batcher.submit(ask).result()
        except json.JSONDecodeError:
            self._error(400, "the request body is not JSON", "invalid_request_error")
        except BadRequest as exc:
            self._error(exc.status, exc.message, exc.code)
        except Exception as exc:  # noqa: BLE001 - the client hears the failure instead of a dropped connection
            self._error(500, f"the model failed: {exc}", "server_error")
        else:
            self._send(200, completion(ask, answer, served, adapter.tokenizer))
