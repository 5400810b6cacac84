"""Who may talk to ``focus-eval serve`` and how: the checks every request passes before it reaches a route.

``Guard`` (an ASGI middleware) refuses, in this order: a ``Host`` header outside the allow-list (403: a DNS
rebinding page reaches the server under its own name), an ``Origin`` outside the allow-list or a browser's
cross-site fetch without one (403: another web page), a missing or wrong bearer token when one is set (401), a
POST whose ``Content-Type`` is not ``application/json`` (415: no browser "simple request" gets through), a body
declared or sent beyond ``max_body_bytes`` (413) or not sent within ``read_timeout_s`` (408). Refusals close
the connection. ``guarded_protocol`` is uvicorn's HTTP/1.1 protocol with a deadline on the request line and
headers (a half-sent request is dropped) and on an answer left unread, and a JSON body on its own 400 (a
request that is not HTTP).
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import ipaddress
import json
import logging
import os
import re
from dataclasses import dataclass, field
from typing import Any

from focus_eval.adapters.serve_limits import ClientError, ServeLimits
from focus_eval.errors import FocusError

log = logging.getLogger("focus_eval.serve")
LOOPBACK_NAMES = ("localhost", "127.0.0.1", "[::1]")
MIN_KEY_CHARS = 16
_HOST = re.compile(r"(\[[0-9a-fA-F:.]+\]|[A-Za-z0-9._-]+|[0-9a-fA-F:]+)(:\d{1,5})?")
_ORIGIN = re.compile(r"https?://(\[[0-9a-fA-F:.]+\]|[A-Za-z0-9._-]+)(:\d{1,5})?")
_COMMON_HEADERS = [(b"x-content-type-options", b"nosniff"), (b"cache-control", b"no-store")]


def is_loopback(host: str) -> bool:
    """Whether listening on ``host`` keeps the server to this machine."""
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def exposure_warning(host: str) -> str | None:
    """The warning printed when ``host`` listens beyond this machine (None for a loopback address)."""
    if is_loopback(host):
        return None
    return (f"focus-eval serve: WARNING: --host {host} listens beyond this machine: anyone who can reach this "
            f"address and holds the token can run the model (time, memory), and requests and the token travel "
            f"unencrypted over plain HTTP; prefer 127.0.0.1 with an SSH tunnel, or a TLS proxy in front")


def read_api_key(env_name: str) -> bytes:
    """The bearer token from environment variable ``env_name`` (its value is never printed)."""
    value = os.environ.get(env_name, "")
    if not value.strip():
        raise FocusError(f"--api-key-env {env_name}: the environment variable {env_name} is unset or empty")
    if len(value.strip()) < MIN_KEY_CHARS:
        raise FocusError(f"--api-key-env {env_name}: the token must have at least {MIN_KEY_CHARS} characters")
    return value.strip().encode("utf-8")


def _host_port(name: str, port: int) -> str:
    name = name.strip().lower()
    if name.startswith("["):
        return name if "]:" in name else f"{name}:{port}"
    if name.count(":") > 1:  # a bare IPv6 address
        return f"[{name}]:{port}"
    return name if ":" in name else f"{name}:{port}"


@dataclass(frozen=True)
class Access:
    """The ``Host`` values accepted (lower case, with the port), the browser origins allowed (CORS) and the
    bearer token (None: no token asked)."""

    hosts: frozenset
    origins: frozenset = frozenset()
    api_key: bytes | None = field(default=None, repr=False)

    @classmethod
    def build(cls, bound_host: str, port: int, extra_hosts=(), origins=(), api_key: bytes | None = None):
        for name in extra_hosts:
            if not _HOST.fullmatch(name.strip()):
                raise FocusError(f"--allowed-host {name!r}: give a host name or address, with or without :PORT")
        for origin in origins:
            if not _ORIGIN.fullmatch(origin.strip().rstrip("/")):
                raise FocusError(f"--allowed-origin {origin!r}: give one origin, scheme://host[:port] (no "
                                 f"wildcard, no path)")
        names = [bound_host, *LOOPBACK_NAMES, *extra_hosts]
        hosts = {_host_port(name, port) for name in names}
        if port == 80:  # a client leaves the default port out of Host
            hosts |= {h.rsplit(":", 1)[0] for h in hosts}
        return cls(frozenset(hosts), frozenset(o.strip().rstrip("/").lower() for o in origins), api_key)


def error_response(exc: ClientError, extra: list | None = None) -> dict[str, Any]:
    """The two ASGI messages of an error answer (JSON body, ``Connection: close``)."""
    body = json.dumps(exc.payload).encode("utf-8")
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()),
               (b"connection", b"close"), *_COMMON_HEADERS, *(extra or [])]
    headers += [(k.lower().encode("latin-1"), v.encode("latin-1")) for k, v in exc.headers.items()]
    return {"start": {"type": "http.response.start", "status": exc.status, "headers": headers},
            "body": {"type": "http.response.body", "body": body, "more_body": False}}


class _Disconnected(Exception):
    """The client went away before its body arrived."""


def _headers(scope) -> dict[str, str]:
    """The request headers this guard reads, one value each (a repeated one is a 400)."""
    wanted = {"host", "origin", "authorization", "content-type", "content-length", "sec-fetch-site",
              "transfer-encoding"}
    found: dict[str, str] = {}
    for raw_name, raw_value in scope.get("headers", []):
        name = raw_name.decode("latin-1").lower()
        if name in wanted:
            if name in found:
                raise ClientError(f"the {name} header is given more than once", code="invalid_header")
            found[name] = raw_value.decode("latin-1").strip()
    return found


class Guard:
    """The ASGI middleware in front of the routes (see the module's text); a POST body reaches the app read in
    full, within the size and time limits."""

    def __init__(self, app, access: Access, limits: ServeLimits):
        self.app, self.access, self.limits = app, access, limits

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        cors: list = []
        try:
            headers = _headers(scope)
            cors = self.check_caller(scope, headers)
            if scope["method"] == "OPTIONS" and cors:
                return await self._preflight(send, cors)
            self.check_token(headers)
            if scope["method"] in ("POST", "PUT", "PATCH"):
                self.check_body_headers(headers)
                body = await self.read_body(receive, headers)
                receive = _replay(body, receive)
        except _Disconnected:
            return None
        except ClientError as exc:
            log.info("refused %s %r: %d %s", scope.get("method"), scope.get("path", "")[:200], exc.status, exc.code)
            message = error_response(exc, cors)
            await send(message["start"])
            return await send(message["body"])
        return await self.app(scope, receive, _adding(send, cors))

    def check_caller(self, scope, headers: dict[str, str]) -> list:
        """The Host and Origin checks; the CORS headers an allowed origin gets (empty without one)."""
        if headers.get("host", "").lower() not in self.access.hosts:
            raise ClientError("this server does not answer under that Host name (--allowed-host)", 403,
                              "host_not_allowed")
        origin = headers.get("origin")
        if origin is None:
            if headers.get("sec-fetch-site", "none") in ("cross-site", "same-site"):
                raise ClientError("cross-site browser requests are refused", 403, "origin_not_allowed")
            return []
        if origin.rstrip("/").lower() not in self.access.origins:
            raise ClientError("requests from web pages of this origin are refused (--allowed-origin)", 403,
                              "origin_not_allowed")
        return [(b"access-control-allow-origin", origin.encode("latin-1")), (b"vary", b"Origin")]

    def check_token(self, headers: dict[str, str]) -> None:
        """The bearer token, compared in constant time, when the server has one."""
        if self.access.api_key is None:
            return
        scheme, _, token = headers.get("authorization", "").partition(" ")
        given = token.strip().encode("latin-1") if scheme.lower() == "bearer" else b""
        # digests of equal length, so that the comparison's time tells nothing, not even the token's length
        if not hmac.compare_digest(hashlib.sha256(given).digest(), hashlib.sha256(self.access.api_key).digest()):
            raise ClientError("a valid bearer token is required (Authorization: Bearer ...)", 401,
                              "invalid_api_key", {"WWW-Authenticate": "Bearer"})

    def check_body_headers(self, headers: dict[str, str]) -> None:
        """A JSON body (415 otherwise: a browser sends no simple request as JSON) of a declared length within
        the limit (413)."""
        media, _, params = headers.get("content-type", "").partition(";")
        charset = params.strip().lower().replace('"', "")
        if media.strip().lower() != "application/json" or charset not in ("", "charset=utf-8"):
            raise ClientError("the request body must be sent as Content-Type: application/json (UTF-8)", 415,
                              "unsupported_media_type")
        declared = headers.get("content-length")
        if declared is not None and not declared.isdigit():  # h11 refuses these first; checked here as well
            raise ClientError("Content-Length must be a whole number of bytes", code="invalid_header")
        if declared is not None and int(declared) > self.limits.max_body_bytes:
            raise ClientError(f"the request body may hold at most {self.limits.max_body_bytes} bytes "
                              f"(--max-body-bytes)", 413, "body_too_large")
        if declared is None and "transfer-encoding" not in headers:
            raise ClientError("a POST needs Content-Length or chunked Transfer-Encoding", 411,
                              "length_required")

    async def read_body(self, receive, headers: dict[str, str]) -> bytes:
        """The whole body, at most ``max_body_bytes``, arrived within ``read_timeout_s``."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.limits.read_timeout_s
        chunks, size = [], 0
        while True:
            try:
                message = await asyncio.wait_for(receive(), max(0.0, deadline - loop.time()))
            except asyncio.TimeoutError:
                raise ClientError(f"the request body did not arrive within {self.limits.read_timeout_s:g} s",
                                  408, "request_timeout") from None
            if message["type"] == "http.disconnect":
                raise _Disconnected()
            size += len(message.get("body", b""))
            if size > self.limits.max_body_bytes:
                raise ClientError(f"the request body may hold at most {self.limits.max_body_bytes} bytes "
                                  f"(--max-body-bytes)", 413, "body_too_large")
            chunks.append(message.get("body", b""))
            if not message.get("more_body", False):
                return b"".join(chunks)

    async def _preflight(self, send, cors: list) -> None:
        headers = [*cors, *_COMMON_HEADERS, (b"access-control-allow-methods", b"GET, POST"),
                   (b"access-control-allow-headers", b"Authorization, Content-Type"),
                   (b"access-control-max-age", b"600"), (b"content-length", b"0")]
        await send({"type": "http.response.start", "status": 204, "headers": headers})
        await send({"type": "http.response.body", "body": b"", "more_body": False})


def _replay(body: bytes, receive):
    """An ASGI receive that hands the app the body already read, then waits on the client as before."""
    sent = False

    async def again():
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    return again


def _adding(send, extra: list):
    """An ASGI send that adds the common (and any CORS) headers to the response."""

    async def sending(message):
        if message["type"] == "http.response.start":
            message = {**message, "headers": [*message.get("headers", []), *_COMMON_HEADERS, *extra]}
        await send(message)

    return sending


def guarded_protocol(header_timeout_s: float):
    """uvicorn's h11 protocol with two deadlines: a connection that has not sent a whole request head
    ``header_timeout_s`` after it opened (or after its last answer) is closed, so half-sent requests hold
    nothing; one that leaves an answer unread that long (the send buffer full) is cut, so unread answers hold
    no memory. Its own 400 (not HTTP, a bad Content-Length) carries a JSON body."""
    import h11
    from uvicorn.protocols.http.h11_impl import H11Protocol

    class GuardedH11Protocol(H11Protocol):
        _head_timer = None
        _write_timer = None

        def pause_writing(self) -> None:
            super().pause_writing()
            if self._write_timer is None:
                self._write_timer = self.loop.call_later(header_timeout_s, self.transport.abort)

        def resume_writing(self) -> None:
            if self._write_timer is not None:
                self._write_timer.cancel()
                self._write_timer = None
            super().resume_writing()

        def connection_made(self, transport) -> None:
            super().connection_made(transport)
            self._arm()

        def data_received(self, data: bytes) -> None:
            super().data_received(data)
            if self.cycle is not None and not self.cycle.response_complete:
                self._disarm()  # a whole request head arrived: the body has the app's deadline

        def on_response_complete(self) -> None:
            super().on_response_complete()
            if not self.transport.is_closing() and (self.cycle is None or self.cycle.response_complete):
                self._arm()

        def connection_lost(self, exc) -> None:
            self._disarm()
            if self._write_timer is not None:
                self._write_timer.cancel()
                self._write_timer = None
            super().connection_lost(exc)

        def _arm(self) -> None:
            self._disarm()
            self._head_timer = self.loop.call_later(header_timeout_s, self._expire)

        def _disarm(self) -> None:
            if self._head_timer is not None:
                self._head_timer.cancel()
                self._head_timer = None

        def _expire(self) -> None:
            self._head_timer = None
            if not self.transport.is_closing():
                self.transport.close()

        def send_400_response(self, msg: str) -> None:
            exc = ClientError("the request is not valid HTTP/1.1 (request line, headers or Content-Length)",
                              code="invalid_http")
            message = error_response(exc)
            headers = [(k, v) for k, v in message["start"]["headers"]]
            for event in (h11.Response(status_code=400, headers=headers, reason=b"Bad Request"),
                          h11.Data(data=message["body"]["body"]), h11.EndOfMessage()):
                try:
                    self.transport.write(self.conn.send(event))
                except h11.LocalProtocolError:  # the connection cannot carry an answer any more
                    break
            self.transport.close()

    return GuardedH11Protocol
