"""A small OpenAI-compatible HTTP server over one loaded in-process MLLM (``focus-eval serve``): ``GET /v1/models``
and ``POST /v1/chat/completions`` with one user turn of text and at most one inline image, greedy decoding, and
the first answer token's log-probabilities. Starlette routes behind uvicorn; every request first passes
``serve_guard.Guard`` (Host, Origin, token, Content-Type, body size and deadline) and is read under
``serve_limits.ServeLimits`` (JSON depth, prompt length, pixel budget, ``max_tokens`` cap, queue bound, time).

Requests that arrive together are answered in one batched call of the adapter (grouped by answer length and
by whether they hold an image), so several evaluation processes can share one model; up to ``max_queue`` more
wait their turn (503 with ``Retry-After`` beyond). The turn is rendered as the in-process adapter renders
[image, prompt] (or the prompt alone; no system turn), so the numbers equal an in-process run's.
``top_logprobs`` may exceed OpenAI's limit of 20, up to ``max_top_logprobs`` (an extension, for exact scores of
tokens outside the top 20; more than the vocabulary lists all of it). ``logprobs.content`` lists the first
answer token only, the one focus-eval reads. A request field this server does not read (``FIELDS``), or one of
``NEUTRAL`` at a value that would change the answer, is refused by name: nothing is silently ignored.
"""

from __future__ import annotations

import base64
import binascii
import json
import logging
import math
import queue
import socket
import threading
import time
import uuid
from concurrent.futures import Future
from dataclasses import dataclass
from typing import Any

from focus_eval.adapters.mllm_interface import ServedMLLM
from focus_eval.adapters.serve_limits import ClientError, ServeLimits, open_image
from focus_eval.errors import FocusError

# the longest a request waits for others to share its batch
BATCH_WINDOW_S = 0.005
# the request fields this server reads
FIELDS = frozenset({"model", "messages", "max_tokens", "max_completion_tokens", "temperature", "n", "stream",
                    "logprobs", "top_logprobs"})
# fields clients send by habit, taken only at a value that leaves a greedy answer as it is (a test of the value)
NEUTRAL: dict[str, Any] = {
    "top_p": lambda v: v is None or (not isinstance(v, bool) and v in (1, 1.0)),
    "presence_penalty": lambda v: v is None or (not isinstance(v, bool) and v in (0, 0.0)),
    "frequency_penalty": lambda v: v is None or (not isinstance(v, bool) and v in (0, 0.0)),
    "seed": lambda v: v is None or (isinstance(v, int) and not isinstance(v, bool)),  # greedy: nothing to seed
    "user": lambda v: v is None or isinstance(v, str),
    "stop": lambda v: v is None or v == [],
    "logit_bias": lambda v: v is None or v == {},
    "response_format": lambda v: v is None or v == {"type": "text"},
    "stream_options": lambda v: v is None,
    "tools": lambda v: v is None or v == [],
    "tool_choice": lambda v: v is None or v == "none",
}
# the keys of one message, of its parts and of an image part's image_url
MESSAGE_KEYS = frozenset({"role", "content"})
PART_KEYS = {"text": frozenset({"type", "text"}), "image_url": frozenset({"type", "image_url"})}
IMAGE_URL_KEYS = frozenset({"url", "detail"})
DETAILS = (None, "auto", "low", "high")  # an image's detail level: one rendering here, whichever is named
log = logging.getLogger("focus_eval.serve")


@dataclass
class Ask:
    """One chat-completion request as the model sees it."""

    image: Any  # None: a text-only turn
    prompt: str
    max_tokens: int
    logprobs: bool
    top_logprobs: int


def decode_image(url: Any, max_pixels: int = ServeLimits.max_pixels):
    """A PIL image (RGB) from a base64 data URL, at most ``max_pixels`` pixels; the server fetches nothing."""
    if not isinstance(url, str) or not url.startswith("data:") or ";base64," not in url:
        raise ClientError("image_url must be a base64 data URL (data:image/png;base64,...); this server fetches "
                          "nothing")
    try:
        data = base64.b64decode(url.split(";base64,", 1)[1], validate=True)
    except (binascii.Error, ValueError) as exc:
        raise ClientError(f"image_url: the base64 data is not valid ({exc})", code="invalid_image") from None
    return open_image(data, max_pixels)


def _int_field(body: dict, key: str, default: int, lowest: int) -> int:
    value = body.get(key, default)
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int) or value < lowest:
        raise ClientError(f"{key} must be a whole number of at least {lowest}, got {value!r}"[:300])
    return value


def _name(key: Any) -> str:
    """A client's field name as a message quotes it (cut short: the name is the client's text)."""
    return repr(key)[:60]


def _unknown(keys, known, where: str) -> None:
    """Refuse, by name, every key of ``keys`` outside ``known`` (``where`` says whose keys they are)."""
    extra = sorted((k for k in keys if k not in known), key=str)
    if extra:
        named = ", ".join(_name(k) for k in extra[:5]) + (f" and {len(extra) - 5} more" if len(extra) > 5 else "")
        raise ClientError(f"{where} {named}: not supported by this server (it reads "
                          f"{', '.join(sorted(known))})", code="unsupported_field")


def _check_fields(body: dict) -> None:
    """Every top-level field is one this server reads, or a habitual one at a value that changes nothing."""
    for key in body:
        if key in NEUTRAL and not NEUTRAL[key](body[key]):
            raise ClientError(f"field {key!r} = {json.dumps(body[key])[:60]} is not supported: this server gives "
                              f"greedy, unconstrained answers (leave it out, or give it its neutral value)",
                              code="unsupported_value")
    _unknown(body, FIELDS | set(NEUTRAL), "field")


def _check_options(body: dict, served: str) -> None:
    _check_fields(body)
    if body.get("model") not in (None, served):
        raise ClientError(f"model {str(body.get('model'))[:100]!r} is not served here; this server serves "
                          f"{served!r}", 404, "model_not_found")
    if body.get("stream"):
        raise ClientError("stream is not supported")
    if body.get("temperature", 0) not in (0, 0.0, None) or body.get("n", 1) not in (1, None):
        raise ClientError("only greedy answers are served: temperature 0 and n 1")


def _user_turn(body: dict) -> tuple[list, list]:
    """The image parts and the texts of the one user turn."""
    messages = body.get("messages")
    if not isinstance(messages, list) or len(messages) != 1 or not isinstance(messages[0], dict) \
            or messages[0].get("role") != "user":
        raise ClientError("messages must hold exactly one user turn (no system turn, no history)")
    _unknown(messages[0], MESSAGE_KEYS, "message field")
    content = messages[0].get("content")
    parts = [{"type": "text", "text": content}] if isinstance(content, str) else content
    if not isinstance(parts, list) or not all(isinstance(p, dict) for p in parts):
        raise ClientError("the user turn's content must be text or a list of parts")
    for part in parts:
        kind = part.get("type")
        if isinstance(kind, str) and kind in PART_KEYS:
            _unknown(part, PART_KEYS[kind], f"{kind} part field")
    images = [p for p in parts if p.get("type") == "image_url"]
    texts = [p.get("text") for p in parts if p.get("type") == "text"]
    if len(images) > 1 or len(images) + len(texts) != len(parts) or not all(isinstance(t, str) for t in texts):
        raise ClientError("the user turn must hold text parts and at most one image_url part")
    return images, texts


def parse_request(body: Any, served: str, default_tokens: int, limits: ServeLimits = ServeLimits()) -> Ask:
    """The one user turn [image, text] of a chat-completions request; anything this server cannot honour
    exactly (sampling, several turns or images, streaming) or that exceeds ``limits`` is a ClientError."""
    if not isinstance(body, dict):
        raise ClientError("the request body must be a JSON object")
    _check_options(body, served)
    images, texts = _user_turn(body)
    prompt = "\n".join(texts)
    try:
        prompt.encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate escaped in the JSON
        raise ClientError("the text is not valid Unicode (a lone surrogate)", code="invalid_encoding") from None
    if len(prompt) > limits.max_prompt_chars:
        raise ClientError(f"the text holds {len(prompt)} characters; at most {limits.max_prompt_chars} are "
                          f"served (--max-prompt-chars)", code="prompt_too_long")
    cap = limits.max_tokens_cap
    tokens = _int_field(body, "max_completion_tokens", _int_field(body, "max_tokens", min(default_tokens, cap), 1),
                        1)
    if tokens > cap:
        raise ClientError(f"max_tokens {tokens} is above this server's cap of {cap} (--max-tokens-cap)",
                          code="max_tokens_too_large")
    logprobs = body.get("logprobs") or False
    if not isinstance(logprobs, bool):
        raise ClientError("logprobs must be true or false")
    top = _int_field(body, "top_logprobs", 0, 0)
    if top and not logprobs:
        raise ClientError("top_logprobs needs logprobs: true")
    if top > limits.max_top_logprobs:
        raise ClientError(f"top_logprobs {top} is above this server's cap of {limits.max_top_logprobs} "
                          f"(--max-top-logprobs)", code="top_logprobs_too_large")
    url = images[0].get("image_url") if images else None
    if isinstance(url, dict):
        _unknown(url, IMAGE_URL_KEYS, "image_url field")
        if url.get("detail") not in DETAILS:
            raise ClientError(f"image_url detail must be auto, low or high, got {str(url.get('detail'))[:40]!r}",
                              code="unsupported_value")
    image = decode_image(url.get("url") if isinstance(url, dict) else url, limits.max_pixels) if images else None
    return Ask(image, prompt, tokens, logprobs, top)


class Batcher:
    """One thread owns the model: it takes every request waiting (up to ``max_batch``), answers those of one
    answer length in one adapter call and hands each request its own answer. At most ``max_queue`` requests
    are admitted and waiting (``reserve``); more are refused with 503 and a Retry-After."""

    def __init__(self, adapter: ServedMLLM, max_batch: int = 16, window_s: float = BATCH_WINDOW_S,
                 max_queue: int = ServeLimits.max_queue):
        self.adapter, self.max_batch, self.window_s = adapter, max(1, int(max_batch)), window_s
        self.max_queue, self.waiting, self.lock = max(1, int(max_queue)), 0, threading.Lock()
        self.batch_seconds = 1.0  # the last batch's time: the Retry-After of a refused request
        self.pending: queue.Queue = queue.Queue()
        self.thread = threading.Thread(target=self._loop, name="focus-eval-serve-model", daemon=True)
        self.thread.start()

    def reserve(self) -> None:
        """Admit one request to the queue, or refuse it (503) when ``max_queue`` are waiting."""
        with self.lock:
            if self.waiting >= self.max_queue:
                retry = str(min(60, max(1, math.ceil(self.batch_seconds))))
                raise ClientError(f"the server is busy: {self.max_queue} requests are waiting for the model "
                                  f"(--max-queue); try again later", 503, "server_busy", {"Retry-After": retry})
            self.waiting += 1

    def release(self) -> None:
        """Give back an admitted request's place (it failed before ``submit``, or the model took it)."""
        with self.lock:
            self.waiting -= 1

    def submit(self, ask: Ask) -> Future:
        """Queue an admitted request; its place is given back when the model thread takes it."""
        future: Future = Future()
        self.pending.put((ask, future))
        return future

    def close(self) -> None:
        """Stop the model thread once the requests queued before this are answered."""
        self.pending.put(None)

    def _take(self) -> list | None:
        first = self.pending.get()
        if first is None:
            return None
        batch = [first]
        deadline = time.monotonic() + self.window_s
        while len(batch) < self.max_batch:
            try:
                item = self.pending.get(timeout=max(0.0, deadline - time.monotonic()))
            except queue.Empty:
                break
            if item is None:
                self.pending.put(None)  # taken after this batch
                break
            batch.append(item)
        for _ in batch:
            self.release()
        # a request whose client stopped waiting (its time ran out) is dropped here
        return [(ask, future) for ask, future in batch if future.set_running_or_notify_cancel()]

    def _loop(self) -> None:
        while (batch := self._take()) is not None:
            started = time.monotonic()
            for length, text_only in sorted({(ask.max_tokens, ask.image is None) for ask, _ in batch}):
                group = [(ask, future) for ask, future in batch
                         if ask.max_tokens == length and (ask.image is None) == text_only]
                self._run_group(group, length, text_only)
            if batch:
                self.batch_seconds = time.monotonic() - started

    def _run_group(self, group: list, length: int, text_only: bool) -> None:
        """Answer one group in one call; when the call fails, each request alone, so that only the request
        that fails hears of it."""
        try:
            answers = self._answer([ask for ask, _ in group], length, text_only)
            if len(answers) != len(group):
                raise RuntimeError(f"the adapter gave {len(answers)} answers to {len(group)} requests")
        except Exception as exc:  # noqa: BLE001 - every waiting request must hear why
            if len(group) > 1:
                for item in group:
                    self._run_group([item], length, text_only)
                return
            group[0][1].set_exception(exc)
            return
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


@dataclass(frozen=True)
class _Served:
    """What the routes read: the model, its name, the model thread and the limits."""

    adapter: ServedMLLM
    served: str
    batcher: Batcher
    limits: ServeLimits


def _json_response(payload: dict, status: int = 200):
    """A JSON answer as the server has always written it (a log-probability of minus infinity included)."""
    from starlette.responses import Response

    return Response(json.dumps(payload), status, media_type="application/json")


def _read_ask(raw: bytes, state: _Served) -> Ask:
    """The request body to an ``Ask`` (run in a worker thread: JSON, image header, decoding)."""
    from focus_eval.adapters.serve_limits import read_json

    body = read_json(raw, state.limits.max_json_depth)
    return parse_request(body, state.served, state.adapter.max_new_tokens, state.limits)


async def _chat(request, state: _Served):
    import asyncio

    from starlette.concurrency import run_in_threadpool

    started = time.monotonic()
    raw = await request.body()  # read in full by the guard, within its limits
    state.batcher.reserve()
    try:
        ask = await run_in_threadpool(_read_ask, raw, state)
    except BaseException:
        state.batcher.release()
        raise
    future = state.batcher.submit(ask)
    limit = state.limits.request_timeout_s
    try:
        answer = await asyncio.wait_for(asyncio.wrap_future(future), max(0.01, limit - (time.monotonic() - started)))
    except asyncio.TimeoutError:
        raise ClientError(f"the model did not answer within {limit:g} s (--request-timeout)", 504,
                          "request_timeout") from None
    except FocusError as exc:  # the adapter's own refusal of this input (too many visual tokens, ...)
        raise ClientError(f"the model cannot answer this request: {exc}"[:1000], 400, "unanswerable") from None
    except Exception as exc:  # noqa: BLE001 - a fault of the server: logged here, not shown to the client
        log.error("the model failed on a request: %s", type(exc).__name__, exc_info=exc)
        return _json_response({"error": {"message": "the model failed on this request (the server's log holds "
                                                    "the reason)", "type": "server_error", "code": "model_failed"}},
                              500)
    # decoding the listed tokens and writing the JSON take seconds for a whole vocabulary: off the event loop
    return await run_in_threadpool(lambda: _json_response(completion(ask, answer, state.served,
                                                                     state.adapter.tokenizer)))


async def _refused(request, exc: ClientError):
    response = _json_response(exc.payload, exc.status)
    response.headers.update(exc.headers)
    return response


async def _no_route(request, exc):
    """Starlette's 404 and 405, in the JSON error shape."""
    status = getattr(exc, "status_code", 404)
    code = {404: "not_found", 405: "method_not_allowed"}.get(status, "invalid_request_error")
    refusal = ClientError(f"no route {request.method} {request.url.path[:200]}", status, code,
                          dict(getattr(exc, "headers", None) or {}))
    return await _refused(request, refusal)


async def _fault(request, exc: Exception):
    log.error("serve: unexpected fault on %s %s", request.method, request.url.path[:200], exc_info=exc)
    return _json_response({"error": {"message": "internal server error (the server's log holds the reason)",
                                     "type": "server_error", "code": "server_error"}}, 500)


def build_app(state: _Served, access):
    """The ASGI application: the routes behind the ``Guard``."""
    from starlette.applications import Starlette
    from starlette.exceptions import HTTPException
    from starlette.routing import Route

    from focus_eval.adapters.serve_guard import Guard

    async def models(request):
        return _json_response({"object": "list", "data": [{"id": state.served, "object": "model", "created": 0,
                                                           "owned_by": "focus-eval"}]})

    async def chat(request):
        return await _chat(request, state)

    routes = [Route(path, models, methods=["GET"]) for path in ("/v1/models", "/models", "/v1/models/", "/models/")]
    routes += [Route(path, chat, methods=["POST"]) for path in ("/v1/chat/completions", "/chat/completions",
                                                                 "/v1/chat/completions/", "/chat/completions/")]
    app = Starlette(routes=routes, exception_handlers={ClientError: _refused, HTTPException: _no_route,
                                                        Exception: _fault})
    app.router.redirect_slashes = False
    return Guard(app, access, state.limits)


def _listen(host: str, port: int) -> socket.socket:
    """The listening socket (bound here, so ``--port 0`` knows its port before the Host list is made)."""
    name = host.strip("[]")
    family = socket.AF_INET6 if ":" in name else socket.AF_INET
    return socket.create_server((name, port), family=family, backlog=128)


class ChatServer:
    """The HTTP server: uvicorn on one event loop for every connection, one model thread (``Batcher``).

    ``serve_forever`` runs it in the calling thread (Ctrl-C stops it); ``start``/``shutdown`` in a background
    thread."""

    def __init__(self, adapter: ServedMLLM, served: str, host: str = "127.0.0.1", port: int = 8000,
                 max_batch: int = 16, limits: ServeLimits | None = None, allowed_hosts=(), allowed_origins=(),
                 api_key: bytes | None = None):
        import uvicorn

        from focus_eval.adapters.serve_guard import Access, guarded_protocol

        if not isinstance(adapter, ServedMLLM):
            raise FocusError(f"model {served!r}: serve needs an in-process multimodal LLM (an hf_mllm preset)")
        self.adapter, self.served, self.host = adapter, served, host
        self.limits = limits or ServeLimits()
        self.socket = _listen(host, port)
        self.port = self.socket.getsockname()[1]
        try:
            access = Access.build(host, self.port, allowed_hosts, allowed_origins, api_key)
        except FocusError:
            self.socket.close()
            raise
        self.batcher = Batcher(adapter, max_batch, max_queue=self.limits.max_queue)
        app = build_app(_Served(adapter, served, self.batcher, self.limits), access)
        config = uvicorn.Config(app, lifespan="off", log_config=None, access_log=False, ws="none", loop="asyncio",
                                http=guarded_protocol(self.limits.read_timeout_s), proxy_headers=False,
                                server_header=False, timeout_keep_alive=int(self.limits.keep_alive_s),
                                timeout_graceful_shutdown=5, h11_max_incomplete_event_size=16 * 1024,
                                backlog=128)
        self.server = uvicorn.Server(config)
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        host = f"[{self.host.strip('[]')}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}/v1"

    def serve_forever(self) -> None:
        self.server.run(sockets=[self.socket])

    def start(self, wait_s: float = 30.0) -> "ChatServer":
        """Serve in a background thread; return once it accepts connections."""
        self._thread = threading.Thread(target=self.serve_forever, name="focus-eval-serve-http", daemon=True)
        self._thread.start()
        deadline = time.monotonic() + wait_s
        while not self.server.started:
            if not self._thread.is_alive() or time.monotonic() > deadline:
                raise FocusError("serve: the HTTP server did not start")
            time.sleep(0.01)
        return self

    def shutdown(self) -> None:
        self.server.should_exit = True
        if self._thread is not None:
            self._thread.join(timeout=30)

    def server_close(self) -> None:
        """Close the listening socket and let the model thread end."""
        self.socket.close()
        self.batcher.close()
