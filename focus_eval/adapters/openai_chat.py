"""The ``openai_chat`` adapter: a multimodal LLM behind any OpenAI-compatible chat-completions endpoint (GPT-4o,
a local inference server, ``focus-eval serve``), answering the same calls as the in-process MLLM adapter.

Each (image, prompt) row is one request: the user turn holds the image inline (a base64 PNG data URL of the
decoded image, lossless; none for a text-only question) and the prompt, with ``max_tokens``, ``temperature: 0`` and, unless turned off,
``logprobs: true`` with ``top_logprobs: N``. First-token probabilities come from the returned top log-probabilities
when the server gives them: ``p_yes`` is the largest probability among the tokens that read as a yes variant
("yes", "Yes", with a leading space or newline; the in-process rule), ``p_no`` likewise, ``score_norm`` their
ratio; an option letter's probability is the largest among its variants, renormalised over the question's
letters (``letter_mass`` is what they held before). A variant the server did not list counts as probability 0.
When the server lists none of them the answer text decides (yes 1, no 0; the named letter 1, else every
letter alike) and the row says ``scored_by: text``.

Requests run a bounded number at a time. HTTP 408, 429, 5xx, timeouts and connection errors are retried with
exponential backoff and jitter (``Retry-After`` honoured) up to ``max_attempts`` tries and ``max_retry_seconds``
per request; then the image is failed with the reason, as an unreadable image is, and the run goes on; the reason
is marked retryable (``mllm_interface.mark_retryable``), so the next run asks that image again. ``timeout`` bounds
each try as a whole (connect, send, the complete answer), not each socket read. No redirect is followed (a 3xx
fails the request, naming both addresses). Log-probabilities are checked (at most 0, no NaN), so probabilities
stay in [0, 1]. The API key is read from the environment variable ``api_key_env`` (default ``OPENAI_API_KEY``),
registered with ``focus_eval.redact`` and masked in every message; it is never written anywhere.
"""

from __future__ import annotations

import base64
import io
import json
import math
import os
import random
import re
import socket
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from email.utils import parsedate_to_datetime
from http.client import HTTPException
from typing import Any, Callable, Sequence
from urllib import error as urlerror
from urllib import request as urlrequest
from urllib.parse import urljoin, urlsplit

from focus_eval.adapters.base import PresetAdapter
from focus_eval.adapters.mllm_choice import parse_letters
from focus_eval.adapters.mllm_interface import mark_retryable
from focus_eval.adapters.mllm_parse import NO_WORDS, PREFIXES, YES_WORDS, parse_yes_no
from focus_eval.errors import FocusError
from focus_eval.redact import redact, register_secret

DEFAULTS: dict[str, Any] = {"api_key_env": "OPENAI_API_KEY", "logprobs": True, "top_logprobs": 20,
                            "max_new_tokens": 5, "max_concurrency": 4, "max_attempts": 6,
                            "max_retry_seconds": 300, "timeout": 120, "backoff_seconds": 1.0}
API_SETTINGS = frozenset({"base_url", "model", "batch_size", "image_detail", *DEFAULTS})
_WHOLE = ("top_logprobs", "max_new_tokens", "max_concurrency", "max_attempts")
_POSITIVE = ("max_retry_seconds", "timeout", "backoff_seconds")
# the most an answer may hold (a chat completion with a top list is a few kilobytes), and an error body
MAX_ANSWER_BYTES = 16 * 2 ** 20
MAX_ERROR_BYTES = 2 ** 16
# a log-probability above 0 by no more than this is rounding and read as 0; beyond it the answer is invalid
LOGPROB_TOLERANCE = 1e-6
# the longest single wait between two tries: backoff grows to this, a Retry-After beyond it is still honoured
MAX_BACKOFF = 60.0
# what an API key may hold: printable ASCII (it travels in a header line)
_HEADER_SAFE = re.compile(r"[\x21-\x7e]+")


class RequestFailed(Exception):
    """A request that did not succeed; ``retry`` when trying again may help (a transient failure: 5xx, 429,
    a refused or dropped connection, the deadline), ``wait`` the server's Retry-After. The reason is redacted."""

    def __init__(self, reason: str, retry: bool = False, wait: float | None = None):
        reason = redact(reason)
        super().__init__(reason)
        self.reason, self.retry, self.wait = reason, retry, wait


class InvalidAnswer(ValueError):
    """The endpoint answered, but not with a usable chat completion (a permanent failure of the row)."""


class FailedAnswers(list):
    """The (empty) answers of an image whose requests failed; ``error`` says why (the runner fails the image),
    marked retryable (``mllm_interface.retryable``) when every failure was transient."""

    def __init__(self, error: str, retryable: bool = False):
        super().__init__()
        self.error = mark_retryable(redact(error)) if retryable else redact(error)
        self.retryable = retryable


@dataclass(frozen=True)
class RetryPolicy:
    """How often and how long one request is tried: ``max_attempts`` tries within ``max_seconds``."""

    max_attempts: int = 6
    max_seconds: float = 300.0
    base_delay: float = 1.0

    def delay(self, attempt: int, retry_after: float | None) -> float:
        """Seconds to wait after failed try ``attempt`` (0-based): the server's Retry-After when it gave one,
        else exponential backoff with jitter (half fixed, half random, so that parallel clients spread out)."""
        if retry_after is not None:
            return max(0.0, retry_after)
        step = min(MAX_BACKOFF, self.base_delay * 2 ** attempt)
        return step / 2 + random.uniform(0, step / 2)


def retry_after_seconds(value: str | None) -> float | None:
    """A Retry-After header (seconds, or an HTTP date) in seconds from now; None when absent or unreadable."""
    if not value:
        return None
    value = value.strip()
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        return max(0.0, parsedate_to_datetime(value).timestamp() - time.time())
    except (TypeError, ValueError, IndexError):
        return None


def endpoint_host(url: str) -> str:
    """``host[:port]`` of a URL (what the records name of an endpoint)."""
    split = urlsplit(url)
    return (split.hostname or "") + (f":{split.port}" if split.port else "")


class _Deadline:
    """The whole-request bound: connecting gets only the time left (for every address a host name gives, not
    ``seconds`` each), and a timer that, when ``seconds`` have passed, shuts down every socket the request
    opened, so a blocked send or read returns at once, however slowly the server trickles bytes."""

    def __init__(self, seconds: float):
        self.seconds, self.expired = seconds, False
        self.sockets: list = []
        self.lock = threading.Lock()
        self.timer = threading.Timer(seconds, self.expire)
        self.timer.daemon = True
        self.ends = time.monotonic() + seconds

    def __enter__(self) -> "_Deadline":
        self.ends = time.monotonic() + self.seconds
        self.timer.start()
        return self

    def remaining(self) -> float:
        return self.ends - time.monotonic()

    def create_connection(self, address, timeout=None, source_address=None, *args):
        """``socket.create_connection`` within the time left: each address of the host is tried with what
        remains, and none once it is spent."""
        host, port = address
        failure: OSError | None = None
        for family, kind, proto, _, where in socket.getaddrinfo(host, port, 0, socket.SOCK_STREAM):
            left = self.remaining()
            if left <= 0:
                break
            sock = socket.socket(family, kind, proto)
            try:
                sock.settimeout(left)
                if source_address:
                    sock.bind(source_address)
                sock.connect(where)
                return sock
            except OSError as exc:
                failure = exc
                sock.close()
        if self.remaining() <= 0:
            self.expired = True
        raise failure or TimeoutError(f"no time left to connect to {host}:{port}")

    def __exit__(self, *exc) -> None:
        self.timer.cancel()

    def watch(self, sock) -> None:
        with self.lock:
            self.sockets.append(sock)
            late = self.expired
        if late:
            _shut(sock)

    def expire(self) -> None:
        with self.lock:
            self.expired = True
            sockets = list(self.sockets)
        for sock in sockets:
            _shut(sock)

    def connection(self, http_class: type) -> type:
        """``http_class`` whose sockets this deadline watches from the moment they connect."""
        deadline = self

        class Watched(http_class):  # type: ignore[misc, valid-type]
            def __init__(self, *args, **kwargs):
                super().__init__(*args, **kwargs)
                self._create_connection = deadline.create_connection

            def connect(self):
                super().connect()
                deadline.watch(self.sock)

        return Watched


def _shut(sock) -> None:
    try:
        sock.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass


class _NoRedirect(urlrequest.HTTPRedirectHandler):
    """Follows no redirect: urllib then raises the 3xx as an HTTPError, which ``Endpoint`` reports. A request
    carries the API key and its body; neither goes anywhere but to ``base_url``."""

    def redirect_request(self, req, fp, code, msg, headers, newurl):
        return None

    def http_error_302(self, req, fp, code, msg, headers):
        """Not handled: urllib's last handler raises the 3xx as an HTTPError, before the Location is parsed
        (a Location that is no URL would raise something else on the way)."""
        return None

    http_error_301 = http_error_303 = http_error_307 = http_error_308 = http_error_302


def _watched_handlers(deadline: _Deadline) -> list:
    class HTTP(urlrequest.HTTPHandler):
        def do_open(self, http_class, req, **kwargs):
            return super().do_open(deadline.connection(http_class), req, **kwargs)

    class HTTPS(urlrequest.HTTPSHandler):
        def do_open(self, http_class, req, **kwargs):
            return super().do_open(deadline.connection(http_class), req, **kwargs)

    return [HTTP(), HTTPS()]


@dataclass
class Endpoint:
    """POSTs JSON to an OpenAI-compatible API with retries; ``sleep`` and ``clock`` are replaceable in tests.
    ``timeout`` bounds each try as a whole (connect, send and the complete answer); no redirect is followed."""

    base_url: str
    api_key: str | None
    timeout: float
    policy: RetryPolicy
    key_env: str = "OPENAI_API_KEY"
    sleep: Callable[[float], None] = time.sleep
    clock: Callable[[], float] = time.monotonic

    def post(self, path: str, body: dict) -> dict:
        """The JSON answer; a RequestFailed naming the tries once the policy gives up (still ``retry`` when
        the last failure was transient, so that a later run may ask again)."""
        start, attempt = self.clock(), 0
        while True:
            try:
                return self._once(path, body)
            except RequestFailed as exc:
                if not exc.retry:
                    raise
                attempt += 1
                spent = self.clock() - start
                wait = self.policy.delay(attempt - 1, exc.wait)
                if attempt >= self.policy.max_attempts or spent + wait > self.policy.max_seconds:
                    raise RequestFailed(f"{exc.reason} (gave up after {attempt} tries in {spent:.0f} s)",
                                        retry=True) from None
                self.sleep(wait)

    def _once(self, path: str, body: dict) -> dict:
        url = self.base_url.rstrip("/") + path
        headers = {"Content-Type": "application/json", "Accept": "application/json"}
        if self.api_key:
            headers["Authorization"] = f"Bearer {self.api_key}"
        req = urlrequest.Request(url, data=json.dumps(body).encode("utf-8"), headers=headers, method="POST")
        where = f"POST {endpoint_host(url)}{urlsplit(url).path}"
        with _Deadline(self.timeout) as deadline:
            try:
                with self._opener(deadline).open(req, timeout=self.timeout) as response:
                    payload = response.read(MAX_ANSWER_BYTES + 1)
            except urlerror.HTTPError as exc:
                raise self._http_failure(exc, where, url) from None
            except (OSError, HTTPException) as exc:  # refused, reset, timed out, cut short
                raise self._connection_failure(exc, where, deadline.expired) from None
            except ValueError as exc:  # an answer urllib cannot take apart (a header it cannot read)
                raise RequestFailed(f"{where}: the answer is not HTTP that can be read ({type(exc).__name__}: "
                                    f"{str(exc)[:200]})") from None
        if deadline.expired:  # the timer fired as the last bytes came in: the answer may be cut short
            raise self._connection_failure(None, where, True)
        if len(payload) > MAX_ANSWER_BYTES:
            raise RequestFailed(f"{where}: the answer is longer than {MAX_ANSWER_BYTES} bytes")
        try:
            return json.loads(payload)
        except (json.JSONDecodeError, UnicodeDecodeError, RecursionError):
            raise RequestFailed(f"{where}: the answer is not JSON ({redact(repr(payload))[:80]})") from None

    def _connection_failure(self, exc: BaseException | None, where: str, expired: bool) -> RequestFailed:
        if expired:
            return RequestFailed(f"{where}: no complete answer within {self.timeout:g} s (settings.timeout)",
                                 retry=True)
        reason = " ".join(str(getattr(exc, "reason", exc)).split())[:200]  # on one line
        return RequestFailed(f"{where}: connection failed ({reason})", retry=True)

    def _opener(self, deadline: _Deadline):
        """urllib's opener: no redirects, every socket under the deadline; a server on this machine
        (``focus-eval serve``) is reached directly, never through an HTTP proxy set in the environment."""
        handlers = [_NoRedirect(), *_watched_handlers(deadline)]
        if urlsplit(self.base_url).hostname in ("127.0.0.1", "localhost", "::1"):
            handlers.append(urlrequest.ProxyHandler({}))
        return urlrequest.build_opener(*handlers)

    def _http_failure(self, exc: urlerror.HTTPError, where: str, url: str) -> RequestFailed:
        if 300 <= exc.code < 400:
            return self._redirected(exc, where, url)
        try:
            detail = json.loads(exc.read(MAX_ERROR_BYTES) or b"{}").get("error") or {}
            message = detail.get("message") if isinstance(detail, dict) else str(detail)
        except (ValueError, AttributeError, OSError, HTTPException, RecursionError):
            message = None
        text = f"{where}: HTTP {exc.code}" + (f" ({redact(message)[:200]})" if message else "")
        if exc.code in (401, 403) and not self.api_key:
            text += f"; the API key is read from ${self.key_env}, which is not set"
        retry = exc.code in (408, 429) or exc.code >= 500
        wait = retry_after_seconds(exc.headers.get("Retry-After") if exc.headers else None)
        return RequestFailed(text, retry=retry, wait=wait)

    def _redirected(self, exc: urlerror.HTTPError, where: str, url: str) -> RequestFailed:
        """A redirect is refused (a permanent failure): the message names both addresses."""
        location = (exc.headers.get("Location") or "") if exc.headers else ""
        try:
            target = urljoin(url, location.strip()) if location else ""
            split = urlsplit(target)
            there = f"{split.scheme}://{endpoint_host(target)}" if split.scheme else "an address it did not give"
        except ValueError:  # a Location that is no URL ("http://[::1", a port past 65535)
            there = f"an address that is no URL ({redact(location)[:100]!r})"
        here = f"{urlsplit(url).scheme}://{endpoint_host(url)}"
        return RequestFailed(f"{where}: HTTP {exc.code} redirect from {here} to {there}; focus-eval follows no "
                             f"redirects (a request carries the API key and its body), so set settings.base_url "
                             f"to the address that answers")


# ----- reading an answer


Top = list[tuple[str, float]]


def read_answer(response: Any, read: Callable[[Top | None, str], dict[str, Any]]) -> dict[str, Any]:
    """One chat completion read by ``read`` (``yes_no_answer`` or a letter reader); anything that is not a
    chat completion with valid log-probabilities is an ``InvalidAnswer``, the one failure this raises."""
    try:
        return read(first_token_top(response), answer_text(response))
    except InvalidAnswer:
        raise
    except (KeyError, IndexError, TypeError, ValueError, AttributeError, OverflowError, RecursionError) as exc:
        raise InvalidAnswer(f"the endpoint's answer is not a chat completion ({type(exc).__name__})") from None


def _first_choice(response: Any) -> dict:
    choices = response.get("choices") if isinstance(response, dict) else None
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
        raise InvalidAnswer("the endpoint's answer has no choices")
    return choices[0]


def checked_logprob(value: Any, token: Any) -> float:
    """``value`` as a log-probability: a number at most 0 (``LOGPROB_TOLERANCE`` above 0 reads as 0; -infinity,
    probability 0, is what a server sends for a token it rules out); else an InvalidAnswer naming the token
    and the value (NaN, +infinity, above 0, not a number)."""
    try:
        number = float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else math.nan
    except OverflowError:  # an integer beyond float range
        number = math.inf
    if number == -math.inf:
        return number
    if not math.isfinite(number) or number > LOGPROB_TOLERANCE:
        raise InvalidAnswer(f"the endpoint's answer gives token {redact(repr(token))[:40]} the log-probability "
                            f"{redact(repr(value))[:40]}, which is not a log-probability (a number <= 0)")
    return min(number, 0.0)


def first_token_top(response: Any) -> Top | None:
    """(token text, log-probability) pairs of the first answer token: its top list and the token itself; every
    log-probability is checked (``checked_logprob``)."""
    logprobs = _first_choice(response).get("logprobs") or {}
    content = logprobs.get("content") if isinstance(logprobs, dict) else None
    if not content:
        return None
    first = content[0] if isinstance(content, list) else None
    top = first.get("top_logprobs") if isinstance(first, dict) else None
    if not isinstance(first, dict) or not isinstance(top or [], list):
        raise InvalidAnswer("the endpoint's answer has a malformed logprobs.content")
    entries = [*(top or []), first]
    if not all(isinstance(entry, dict) for entry in entries):
        raise InvalidAnswer("the endpoint's answer has a malformed top_logprobs list")
    pairs = [(str(e.get("token")), checked_logprob(e["logprob"], e.get("token")))
             for e in entries if e.get("logprob") is not None and e.get("token") is not None]
    # a token at -infinity has probability 0: the same as a token the server did not list
    return [(token, value) for token, value in pairs if value != -math.inf] or None


def answer_text(response: Any) -> str:
    """The assistant message's text (parts joined when the server sends a list of parts), redacted."""
    message = _first_choice(response).get("message") or {}
    content = message.get("content") if isinstance(message, dict) else None
    if isinstance(content, list):
        content = "".join(str(part.get("text", "")) for part in content if isinstance(part, dict))
    if content is not None and not isinstance(content, str):
        raise InvalidAnswer("the endpoint's answer has a message content that is not text")
    return redact(content or "")


def best_logprob(top: Top | None, words: Sequence[str]) -> float | None:
    """The largest log-probability among tokens that read as ``prefix + word`` (the in-process variants)."""
    variants = {prefix + word for prefix in PREFIXES for word in words}
    found = [logprob for token, logprob in top or () if token in variants]
    return min(0.0, max(found)) if found else None  # a value within LOGPROB_TOLERANCE above 0 reads as 0


def yes_no_answer(top: Top | None, text: str) -> dict[str, Any]:
    """p_yes, p_no, score_norm from the first-token top list, else from the text's first yes/no."""
    yes, no = best_logprob(top, YES_WORDS), best_logprob(top, NO_WORDS)
    if yes is None and no is None:
        said = parse_yes_no(text)
        value = None if said is None else float(said)
        return {"p_yes": value, "p_no": None if said is None else 1.0 - value, "score_norm": value,
                "text": text, "scored_by": "text"}
    p_yes = math.exp(yes) if yes is not None else 0.0
    p_no = math.exp(no) if no is not None else 0.0
    if yes is None or no is None:
        norm = 1.0 if no is None else 0.0
    else:  # p_yes / (p_yes + p_no) with log-probabilities: defined even when both underflow, never overflows
        norm = _logistic(yes - no)
    return {"p_yes": p_yes, "p_no": p_no, "score_norm": norm, "text": text, "scored_by": "logprobs"}


def _logistic(x: float) -> float:
    """1 / (1 + e^-x) without overflow for any finite x."""
    if x >= 0:
        return 1.0 / (1.0 + math.exp(-x))
    e = math.exp(x)
    return e / (1.0 + e)


def letter_answer(top: Top | None, text: str, letters: Sequence[str]) -> dict[str, Any]:
    """The distribution over the option letters from the first-token top list (each letter's best variant,
    renormalised over the letters), else one-hot on the letter the text names, else uniform."""
    best = {letter: best_logprob(top, (letter,)) for letter in letters}
    found = [v for v in best.values() if v is not None]
    if not found:
        named = parse_letters(text, list(letters), multi=False)
        share = {letter: (float(letter in named) if named else 1.0 / len(letters)) for letter in letters}
        return {"letters": share, "letter_mass": None, "text": text, "scored_by": "text"}
    top_value = max(found)
    weights = {k: (math.exp(v - top_value) if v is not None else 0.0) for k, v in best.items()}
    total = sum(weights.values())
    return {"letters": {k: w / total for k, w in weights.items()},
            # the letters' tokens are distinct, so their mass is at most 1; a server that says more is capped
            "letter_mass": min(1.0, sum(math.exp(v) for v in found)), "text": text, "scored_by": "logprobs"}


def image_data_url(image) -> str:
    """A decoded image as a base64 PNG data URL: lossless, so the endpoint sees the pixels decoded here (the
    runner decodes at the preset's ``preprocessing.size``, cropped to the fundus, as for an in-process model)."""
    image = image.convert("RGB")
    buffer = io.BytesIO()
    image.save(buffer, format="PNG")
    return "data:image/png;base64," + base64.b64encode(buffer.getvalue()).decode("ascii")


# ----- the adapter


@dataclass
class _Row:
    """One request: the image's data URL, the prompt, and how its answer is read."""

    image: int
    url: str | None  # None: a text-only turn
    prompt: str
    read: Callable[[Top | None, str], dict[str, Any]]
    answer: dict[str, Any] | None = None
    error: str | None = None
    retry: bool = False  # the error is transient (a later run may ask again)


@dataclass
class _Tally:
    """What the endpoint reported and how rows were scored, across the run (thread-safe)."""

    server_models: set = field(default_factory=set)
    scored_by: dict = field(default_factory=lambda: {"logprobs": 0, "text": 0, "failed": 0})
    lock: Any = field(default_factory=threading.Lock)

    def add(self, model: str | None, scored_by: str) -> None:
        with self.lock:
            if model:
                self.server_models.add(str(model))
            self.scored_by[scored_by] += 1


class OpenAIChatAdapter(PresetAdapter):
    """A preset's model answered by an OpenAI-compatible endpoint (``settings.base_url``, ``settings.model``);
    it provides ``mllm_interface.MLLMAdapter`` (no vision tower, no logits to serve)."""

    families = ("mllm",)
    settings_keys = API_SETTINGS

    @classmethod
    def validate(cls, preset) -> None:
        super().validate(preset)
        settings = {**DEFAULTS, **(preset.settings or {})}
        for key in ("base_url", "model"):
            if not settings.get(key) or not isinstance(settings[key], str):
                raise FocusError(f"preset {preset.name!r}: adapter openai_chat needs settings.{key} "
                                 f"(--model-args base_url=https://HOST/v1,model=NAME)")
        url = urlsplit(settings["base_url"])
        if url.scheme not in ("http", "https") or not url.hostname:
            raise FocusError(f"preset {preset.name!r}: settings.base_url must be an http(s) URL such as "
                             f"https://api.openai.com/v1, got {settings['base_url']!r}")
        if url.username or url.password:
            # a URL is written into presets, manifests and results; a secret belongs in the key's variable
            raise FocusError(f"preset {preset.name!r}: settings.base_url holds credentials; give the key in the "
                             f"environment variable settings.api_key_env names instead")
        batch = settings.get("batch_size")
        batches = [] if batch is None else list(batch.values()) if isinstance(batch, dict) else [batch]
        for key, value in [(k, settings[k]) for k in _WHOLE] + [("batch_size", v) for v in batches]:
            lowest = 0 if key == "top_logprobs" else 1
            if isinstance(value, bool) or not isinstance(value, int) or value < lowest:
                raise FocusError(f"preset {preset.name!r}: settings.{key} must be a whole number of at least "
                                 f"{lowest}, got {value!r}")
        for key in _POSITIVE:
            if isinstance(settings[key], bool) or not isinstance(settings[key], (int, float)) or settings[key] <= 0:
                raise FocusError(f"preset {preset.name!r}: settings.{key} must be a positive number of seconds, "
                                 f"got {settings[key]!r}")
        if not isinstance(settings["logprobs"], bool):
            raise FocusError(f"preset {preset.name!r}: settings.logprobs must be true or false")

    def __init__(self, preset, device: str = "cpu", trust_remote_code: bool = False, adapter_dir=None,
                 **unused: Any):
        if adapter_dir is not None:
            raise FocusError(f"preset {preset.name!r}: --adapter (LoRA) needs local weights; an API model has none")
        if unused:
            raise FocusError(f"preset {preset.name!r}: unsupported adapter options {sorted(unused)}")
        super().__init__(preset, trust_remote_code)
        self.options = {**DEFAULTS, **self.settings}
        self.name = preset.name
        self.device = "cpu"  # nothing runs here: the images are only encoded for the request
        self.max_new_tokens = int(self.options["max_new_tokens"])
        self.batch_size_hint = self.options.get("batch_size")
        self.model_name = str(self.options["model"])
        self.host = endpoint_host(self.options["base_url"])
        policy = RetryPolicy(int(self.options["max_attempts"]), float(self.options["max_retry_seconds"]),
                             float(self.options["backoff_seconds"]))
        key = os.environ.get(str(self.options["api_key_env"])) or None
        register_secret(key)  # from here on every message focus-eval writes or prints masks it
        if key is not None and not _HEADER_SAFE.fullmatch(key):
            # a line break would add headers of its own to every request; other characters cannot be sent
            raise FocusError(f"preset {preset.name!r}: the API key in ${self.options['api_key_env']} holds a line "
                             f"break or a character an HTTP header cannot carry (printable ASCII only)")
        self.endpoint = Endpoint(self.options["base_url"], key, float(self.options["timeout"]), policy,
                                 key_env=str(self.options["api_key_env"]))
        self.tally = _Tally()
        self.info = {"endpoint_host": self.host, "model": self.model_name, "max_new_tokens": self.max_new_tokens,
                     "top_logprobs": self.top_logprobs, "max_concurrency": int(self.options["max_concurrency"])}

    @property
    def top_logprobs(self) -> int:
        return int(self.options["top_logprobs"]) if self.options["logprobs"] else 0

    @property
    def provenance(self) -> dict[str, Any]:
        """Endpoint host, the model asked for, the model(s) the server said answered, and how rows were scored
        so far in this process."""
        return {"endpoint_host": self.host, "api_model": self.model_name,
                "server_model": sorted(self.tally.server_models) or None,
                "rows_scored_by": dict(self.tally.scored_by)}

    def describe(self) -> dict[str, Any]:
        return {**self.info, **self.provenance}

    # ----- the calls the prompt methods make (mllm_interface.MLLMAdapter)

    def score_and_generate_multi(self, images: Sequence, prompts_per_image: Sequence[Sequence[str]],
                                 max_new_tokens: int | None = None) -> list[list[dict[str, Any]]]:
        """Per image, per prompt: ``p_yes``, ``p_no``, ``score_norm``, ``text`` and ``scored_by``; an image
        whose requests failed gets a ``FailedAnswers`` with the reason."""
        readers = [[yes_no_answer] * len(prompts) for prompts in prompts_per_image]
        return self._ask(images, prompts_per_image, readers, max_new_tokens)

    def score_options_and_generate_multi(self, images: Sequence, prompts_per_image: Sequence[Sequence[str]],
                                         letters_per_prompt: Sequence[Sequence[Sequence[str]]],
                                         max_new_tokens: int | None = None) -> list[list[dict[str, Any]]]:
        """Per image, per question: ``letters`` (the distribution over its option letters), ``letter_mass``,
        ``text`` and ``scored_by``."""
        readers = [[_letter_reader(letters) for letters in rows] for rows in letters_per_prompt]
        return self._ask(images, prompts_per_image, readers, max_new_tokens)

    def score_options_and_generate_text(self, prompts: Sequence[str], letters_per_prompt: Sequence[Sequence[str]],
                                        max_new_tokens: int | None = None) -> list[dict[str, Any]]:
        """Multiple-choice questions with no image (text-only turns; the knowledge_prompt method): per question
        ``letters``, ``letter_mass``, ``text`` and ``scored_by``. A request that failed is a FocusError here,
        since that method has no per-question failure to record (a resumed run continues after it)."""
        rows = [_Row(i, None, p, _letter_reader(letters)) for i, (p, letters) in
                enumerate(zip(prompts, letters_per_prompt))]
        self._send(rows, self.max_new_tokens if max_new_tokens is None else int(max_new_tokens))
        failed = next((row for row in rows if row.error is not None), None)
        if failed:
            raise FocusError(mark_retryable(failed.error) if failed.retry else failed.error)
        return [row.answer for row in rows]

    def score_yes_no_multi(self, images: Sequence, prompts_per_image: Sequence[Sequence[str]]):
        return self.score_and_generate_multi(images, prompts_per_image, max_new_tokens=1)

    def score_and_generate(self, images: Sequence, prompts: Sequence[str],
                           max_new_tokens: int | None = None) -> list[dict[str, Any]]:
        """One prompt per image; a failed request is a FocusError here (there is no image list to mark)."""
        if len(images) != len(prompts):
            raise FocusError(f"{len(images)} images but {len(prompts)} prompts")
        out = []
        for answers in self.score_and_generate_multi(images, [[p] for p in prompts], max_new_tokens):
            if isinstance(answers, FailedAnswers):
                raise FocusError(f"model {self.name!r}: {answers.error}")
            out.append(answers[0])
        return out

    def score_yes_no(self, images: Sequence, prompts: Sequence[str]) -> list[dict[str, Any]]:
        return self.score_and_generate(images, prompts, max_new_tokens=1)

    def generate(self, images: Sequence, prompts: Sequence[str], max_new_tokens: int | None = None) -> list[str]:
        return [row["text"] for row in self.score_and_generate(images, prompts, max_new_tokens)]

    # ----- internals

    def request_body(self, url: str | None, prompt: str, max_new_tokens: int) -> dict[str, Any]:
        """The chat-completions request of one row: one user turn [image, prompt] (the prompt alone when ``url``
        is None), greedy, first-token logprobs."""
        content: list[dict[str, Any]] = [{"type": "text", "text": prompt}]
        if url is not None:
            image_part: dict[str, Any] = {"url": url}
            if self.options.get("image_detail"):
                image_part["detail"] = str(self.options["image_detail"])
            content.insert(0, {"type": "image_url", "image_url": image_part})
        body: dict[str, Any] = {"model": self.model_name, "max_tokens": int(max_new_tokens), "temperature": 0,
                                "messages": [{"role": "user", "content": content}]}
        if self.top_logprobs:
            body.update(logprobs=True, top_logprobs=self.top_logprobs)
        return body

    def _ask(self, images, prompts_per_image, readers, max_new_tokens) -> list[list[dict[str, Any]]]:
        if len(images) != len(prompts_per_image):
            raise FocusError(f"{len(images)} images but {len(prompts_per_image)} prompt lists")
        length = self.max_new_tokens if max_new_tokens is None else int(max_new_tokens)
        rows = []
        for i, (image, prompts) in enumerate(zip(images, prompts_per_image)):
            if prompts:
                url = image_data_url(image)  # each image encoded once for all of its prompts
                rows += [_Row(i, url, p, read) for p, read in zip(prompts, readers[i])]
        self._send(rows, length)
        out: list[list[dict[str, Any]]] = [[] for _ in images]
        for i in range(len(images)):
            failed = [row for row in rows if row.image == i and row.error is not None]
            if failed:  # retryable only when every failure of the image was transient
                out[i] = FailedAnswers(failed[0].error, retryable=all(row.retry for row in failed))
        for row in rows:
            if not isinstance(out[row.image], FailedAnswers):
                out[row.image].append(row.answer)
        return out

    def _send(self, rows: list[_Row], max_new_tokens: int) -> None:
        """Every row's request, at most ``max_concurrency`` in flight; each row gets its answer or its error."""
        workers = max(1, min(int(self.options["max_concurrency"]), len(rows)))
        with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="openai_chat") as pool:
            list(pool.map(lambda row: self._answer(row, max_new_tokens), rows))

    def _answer(self, row: _Row, max_new_tokens: int) -> None:
        try:
            response = self.endpoint.post("/chat/completions", self.request_body(row.url, row.prompt,
                                                                                max_new_tokens))
            row.answer = read_answer(response, row.read)
        except (RequestFailed, InvalidAnswer) as exc:
            self._failed(row, str(exc), isinstance(exc, RequestFailed) and exc.retry)
            return
        except Exception as exc:  # noqa: BLE001 - whatever else a hostile answer sets off fails this row, named
            self._failed(row, f"POST {self.host}: {type(exc).__name__}: {str(exc)[:300]}", False)
            return
        model = response.get("model")
        self.tally.add(redact(model)[:200] if isinstance(model, str) else None, row.answer["scored_by"])

    def _failed(self, row: _Row, reason: str, retry: bool) -> None:
        """The row fails with ``reason`` (the cause itself, redacted), transient when ``retry``."""
        row.error = redact(f"model {self.name!r}: {reason}")
        row.retry = retry
        self.tally.add(None, "failed")


def _letter_reader(letters: Sequence[str]) -> Callable[[Top | None, str], dict[str, Any]]:
    return lambda top, text: letter_answer(top, text, letters)


# ----- ``--model openai_chat --model-args base_url=...,model=...``


class APIFamilyPreset:
    """How ``--model openai_chat --model-args base_url=URL,model=NAME`` becomes a preset (no weights, no
    preprocessing: the images go to the endpoint as they are decoded)."""

    name = "openai_chat"

    def preset(self, args: dict[str, Any]) -> dict[str, Any]:
        """The raw preset; ``name`` is consumed, every other argument lands in settings."""
        from focus_eval.adapters.family import default_name

        model = args.get("model")
        if not model or not args.get("base_url"):
            raise FocusError("--model openai_chat needs --model-args base_url=https://HOST/v1,model=NAME "
                             "(the API key comes from $OPENAI_API_KEY, or the variable api_key_env names)")
        name = str(args.pop("name", None) or default_name(self.name, str(model)))
        return {"name": name, "family": "mllm", "domain": "general", "adapter": "openai_chat", "settings": {},
                "description": f"{model} behind an OpenAI-compatible endpoint"}

    def complete(self, raw: dict[str, Any]) -> None:
        """Nothing to derive: the endpoint prepares its own inputs."""


OPENAI_CHAT = APIFamilyPreset()
