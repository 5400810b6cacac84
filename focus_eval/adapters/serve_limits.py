"""What one request may make ``focus-eval serve`` do: the limits (``ServeLimits``), the refusal every limit and
every client mistake ends in (``ClientError``, a 4xx with an OpenAI-style JSON error), and the two readers of
untrusted bytes that hold to the limits: ``read_json`` (strict UTF-8, nesting depth checked before parsing) and
``open_image`` (the pixel count read from the image header before any pixel is decoded).
"""

from __future__ import annotations

import io
import json
import re
import warnings
from dataclasses import dataclass
from typing import Any

# the error "type" of each status, as OpenAI's API names them (other 4xx: invalid_request_error; 5xx: server_error)
ERROR_TYPES = {401: "authentication_error", 403: "permission_error", 404: "not_found_error",
               429: "rate_limit_error"}
# the image formats a chat request may carry (those OpenAI's API takes); PIL's other decoders stay unused
IMAGE_FORMATS = ("PNG", "JPEG", "WEBP", "GIF")
_JSON_SPECIAL = re.compile(r'[\[\]{}"\\]')


@dataclass(frozen=True)
class ServeLimits:
    """Bounds on one request and on the work waiting for the model (``focus-eval serve``'s flags)."""

    max_body_bytes: int = 20 * 1024 * 1024
    max_pixels: int = 40_000_000  # decoded pixels of one image (width x height)
    max_tokens_cap: int = 64  # the longest answer a request may ask for
    max_top_logprobs: int = 1000  # the most first-token alternatives a request may ask for
    max_queue: int = 32  # requests admitted and waiting for the model thread (a decoded image each)
    max_json_depth: int = 64
    max_prompt_chars: int = 32_000
    read_timeout_s: float = 30.0  # the request line and headers, and then the body, each within this
    request_timeout_s: float = 300.0  # from the body read to the answer (waiting for the model included)
    keep_alive_s: int = 5  # an idle connection is closed after this

    def __post_init__(self):
        for name in ("max_body_bytes", "max_pixels", "max_tokens_cap", "max_top_logprobs", "max_queue",
                     "max_json_depth", "max_prompt_chars", "read_timeout_s", "request_timeout_s", "keep_alive_s"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0:
                raise ValueError(f"{name} must be a positive number, got {value!r}")


class ClientError(Exception):
    """A request the server refuses: HTTP ``status``, an error ``code``, extra response ``headers``."""

    def __init__(self, message: str, status: int = 400, code: str = "invalid_request_error",
                 headers: dict[str, str] | None = None):
        super().__init__(message)
        self.message, self.status, self.code = message, status, code
        self.headers = dict(headers or {})

    @property
    def payload(self) -> dict[str, Any]:
        kind = ERROR_TYPES.get(self.status, "invalid_request_error" if self.status < 500 else "server_error")
        return {"error": {"message": self.message, "type": kind, "code": self.code}}


def json_too_deep(text: str, limit: int) -> bool:
    """Whether ``text`` nests arrays and objects deeper than ``limit``, brackets inside strings not counted;
    read without parsing, so a deep document is refused before the parser recurses into it."""
    if text.count("[") + text.count("{") <= limit:
        return False
    depth, in_string, skip = 0, False, -1
    for match in _JSON_SPECIAL.finditer(text):
        at, char = match.start(), match.group()
        if at == skip:
            continue
        if in_string:
            if char == "\\":
                skip = at + 1
            elif char == '"':
                in_string = False
        elif char == '"':
            in_string = True
        elif char in "[{":
            depth += 1
            if depth > limit:
                return True
        elif char in "]}":
            depth -= 1
    return False


def _no_constant(name: str):
    raise ValueError(f"{name} is not a JSON number")


def read_json(raw: bytes, max_depth: int) -> Any:
    """The JSON value of a request body: UTF-8 only (a BOM allowed), at most ``max_depth`` levels deep, no
    NaN or Infinity; anything else is a ClientError (400)."""
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise ClientError(f"the request body is not UTF-8 (byte {exc.start})", code="invalid_encoding") from None
    if json_too_deep(text, max_depth):
        raise ClientError(f"the request body nests deeper than {max_depth} levels", code="too_deep")
    try:
        return json.loads(text, parse_constant=_no_constant)
    except RecursionError:
        raise ClientError(f"the request body nests deeper than {max_depth} levels", code="too_deep") from None
    except ValueError as exc:  # JSONDecodeError, NaN, integers past Python's digit limit
        raise ClientError(f"the request body is not JSON ({exc})", code="invalid_json") from None


def open_image(data: bytes, max_pixels: int):
    """A PIL image (RGB) from encoded bytes; its width x height, read from the header, must be at most
    ``max_pixels`` before a pixel is decoded (413 otherwise), and it must be a PNG, JPEG, WebP or GIF."""
    from PIL import Image, UnidentifiedImageError

    from focus_eval.data.images import open_image as decode_bytes
    from focus_eval.errors import DataError

    too_large = ClientError(f"the image has more than {max_pixels} pixels (--max-pixels)", 413, "image_too_large")
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error", Image.DecompressionBombWarning)
            image = Image.open(io.BytesIO(data), formats=IMAGE_FORMATS)  # reads the header only
            width, height = image.size
            if width * height > max_pixels:
                raise too_large
            image.close()
            # decoded as every image file is (the one decode rule: EXIF orientation, RGB)
            return decode_bytes(data)
    except (Image.DecompressionBombError, Image.DecompressionBombWarning):
        raise too_large from None
    except (UnidentifiedImageError, OSError, ValueError, SyntaxError, EOFError, DataError) as exc:
        raise ClientError(f"image_url: not a readable PNG, JPEG, WebP or GIF image ({exc})",
                          code="invalid_image") from None
