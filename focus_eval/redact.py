"""Secrets out of every message that leaves the process: sample lines, failure reasons, manifests, the console
and raised errors pass their text through :func:`redact`.

An adapter that holds a secret (the ``openai_chat`` API key) registers its value with :func:`register_secret`
when it loads; :func:`redact` then replaces that value wherever it occurs, and, whether registered or not,
anything shaped like a credential: ``Bearer <token>`` (and ``Basic``), ``sk-...`` keys, the user and
password of a URL, and ``api_key=``/``token=``/``password=``-style query and form fields. Each becomes ``***``.

A secret is masked in the forms a message can carry it in, not only as typed: percent-encoded (as a URL or a form
body quotes it, upper- or lower-case hex, ``+`` or ``%20`` for a space), escaped as a JSON string, and inside the
base64 of an HTTP Basic ``user:secret`` pair (the ``Basic`` pattern masks any such token).
"""

from __future__ import annotations

import json
import re
import threading
from typing import Iterable
from urllib.parse import quote, quote_plus

MASK = "***"
# a value shorter than this is not registered: masking every "abc" in a message would hide the message
MIN_SECRET_LENGTH = 6

_SECRETS: set[str] = set()
_LOCK = threading.Lock()

# (pattern, replacement): scheme word kept, the credential masked
_PATTERNS = [
    (re.compile(r"(?i)\b(bearer|basic)(\s+|%20)[A-Za-z0-9._~+/=-]{6,}"), r"\1\2" + MASK),
    (re.compile(r"\bsk-[A-Za-z0-9_-]{6,}"), MASK),
    (re.compile(r"(?i)\b([a-z][a-z0-9+.-]*://)[^/\s@'\"]+@"), r"\1" + MASK + "@"),
    (re.compile(r"(?i)\b(api[_-]?key|access[_-]?token|auth[_-]?token|client[_-]?secret|secret|password|passwd)"
                r"(\"?\s*[=:]\s*\"?)([^&\s\"',;}]{4,})"), r"\1\2" + MASK),
    (re.compile(r"(?i)([?&;]|\b)(key|token|sig)=([^&\s\"',;}]{4,})"), r"\1\2=" + MASK),
]


def encoded_forms(secret: str) -> set[str]:
    """``secret`` and the other spellings a message may carry it in: percent-encoded (every reserved character,
    or only those a URL path escapes; upper- and lower-case hex; ``+`` for a space) and JSON-escaped."""
    forms = {secret, json.dumps(secret, ensure_ascii=True)[1:-1], json.dumps(secret, ensure_ascii=False)[1:-1]}
    for encoded in (quote(secret, safe=""), quote(secret), quote_plus(secret), quote_plus(secret, safe="/")):
        forms.add(encoded)
        forms.add(re.sub(r"%[0-9A-F]{2}", lambda m: m.group(0).lower(), encoded))
    return {f for f in forms if len(f) >= MIN_SECRET_LENGTH}


def register_secret(value: str | None) -> None:
    """Remember ``value`` (an API key read from the environment) so that every later :func:`redact` masks it."""
    if value and len(value) >= MIN_SECRET_LENGTH:
        with _LOCK:
            _SECRETS.add(value)


def forget_secret(value: str | None) -> None:
    """Drop a registered value (tests; a process that hands its key back)."""
    with _LOCK:
        _SECRETS.discard(value or "")


def redact(text: object, secrets: Iterable[str] = ()) -> str:
    """``text`` as a string with every registered secret, every one of ``secrets`` and every credential-shaped
    token replaced by ``***``. Longer secrets are replaced first, so one that contains another goes whole."""
    out = text if isinstance(text, str) else str(text)
    with _LOCK:
        known = set(_SECRETS)
    known.update(s for s in secrets if s and len(s) >= MIN_SECRET_LENGTH)
    for secret in sorted({f for s in known for f in encoded_forms(s)}, key=len, reverse=True):
        out = out.replace(secret, MASK)
    for pattern, replacement in _PATTERNS:
        out = pattern.sub(replacement, out)
    return out
