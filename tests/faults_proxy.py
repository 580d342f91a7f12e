"""A fault-injecting HTTP proxy for tests: it sits between boto3 and the moto S3 server and, as a
script says, answers a request with an S3 error instead of forwarding it, or breaks the
connection.

    proxy = FaultProxy(moto_endpoint)
    proxy.start()
    proxy.script(["slowdown", "internal", None, "reset"])   # the next four requests
    ...                                                     # boto3 with endpoint_url=proxy.url
    proxy.injected                                          # what it really did
    proxy.stop()

Faults (`FAULTS`): `slowdown` (503 `SlowDown`, S3's throttling answer), `internal` (500
`InternalError`), `unavailable` (503 `ServiceUnavailable`), each with the XML error body S3 sends
(none for HEAD, as S3); `reset` (the request is read, then the connection is closed with a TCP
reset and no answer); `truncated` (a GET's answer with its full Content-Length but half its body,
then the connection closes). `None` in a script forwards the request. `down = True` answers every
request with `slowdown` (a source down for good).
"""

from __future__ import annotations

import http.client
import socket
import struct
import threading
import uuid
from collections import deque
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import ClassVar
from urllib.parse import urlsplit

#: fault → (HTTP status, S3 error code, message)
ERRORS: dict[str, tuple[int, str, str]] = {
    "slowdown": (503, "SlowDown", "Please reduce your request rate."),
    "internal": (500, "InternalError", "We encountered an internal error. Please try again."),
    "unavailable": (503, "ServiceUnavailable", "Service is unable to handle request."),
}
FAULTS = (*ERRORS, "reset", "truncated")
# hop-by-hop headers a proxy does not pass on
_HOP = {"connection", "keep-alive", "transfer-encoding", "proxy-connection", "te", "upgrade"}


@dataclass(frozen=True)
class Injected:
    fault: str
    method: str
    path: str


def error_body(code: str, message: str, resource: str) -> bytes:
    request_id = uuid.uuid4().hex[:16].upper()
    return (
        '<?xml version="1.0" encoding="UTF-8"?>\n'
        f"<Error><Code>{code}</Code><Message>{message}</Message>"
        f"<Resource>{resource}</Resource><RequestId>{request_id}</RequestId>"
        f"<HostId>{uuid.uuid4().hex}</HostId></Error>"
    ).encode()


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _Server  # type: ignore[assignment]
    _METHODS: ClassVar[tuple[str, ...]] = ("GET", "HEAD", "PUT", "POST", "DELETE")

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002 - the base's name
        return

    def _handle(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        fault = self.server.proxy.next_fault(self.command, self.path)
        if fault is None:
            self._forward(body)
        elif fault in ERRORS:
            self._error(fault)
        elif fault == "reset":
            self._reset()
        else:  # truncated (a GET's)
            self._forward(body, truncate=True)

    do_GET = do_HEAD = do_PUT = do_POST = do_DELETE = _handle  # noqa: N815 - http.server's names

    def _error(self, fault: str) -> None:
        status, code, message = ERRORS[fault]
        body = error_body(code, message, urlsplit(self.path).path)
        self.send_response(status)
        self.send_header("Content-Type", "application/xml")
        self.send_header("Content-Length", str(len(body)))
        self.send_header("x-amz-request-id", uuid.uuid4().hex[:16].upper())
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def _reset(self) -> None:
        # SO_LINGER with a zero timeout: close() sends RST instead of FIN
        self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        self.close_connection = True
        self.connection.close()

    def _forward(self, body: bytes, truncate: bool = False) -> None:
        up = self.server.proxy.upstream
        conn = http.client.HTTPConnection(up.hostname, up.port, timeout=30)
        try:
            headers = {k: v for k, v in self.headers.items() if k.lower() not in _HOP}
            conn.request(self.command, self.path, body=body or None, headers=headers)
            response = conn.getresponse()
            payload = response.read()
            out_headers = [(k, v) for k, v in response.getheaders() if k.lower() not in _HOP]
        finally:
            conn.close()
        self.send_response(response.status, response.reason)
        for key, value in out_headers:
            if key.lower() != "content-length":
                self.send_header(key, value)
        length = int(response.getheader("Content-Length") or len(payload))
        self.send_header("Content-Length", str(length))
        self.end_headers()
        if self.command == "HEAD":
            return
        if truncate:
            self.wfile.write(payload[: len(payload) // 2])
            self.wfile.flush()
            self.close_connection = True
            return
        self.wfile.write(payload)

    def finish(self) -> None:
        try:
            super().finish()
        except OSError:  # the connection was reset on purpose
            pass


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, proxy: FaultProxy) -> None:
        self.proxy = proxy
        super().__init__(("127.0.0.1", 0), _Handler)

    def handle_error(self, request: object, client_address: object) -> None:
        return  # a reset connection is the point, not an error


class FaultProxy:
    """The proxy in front of `upstream` (`http://host:port`)."""

    def __init__(self, upstream: str) -> None:
        self.upstream = urlsplit(upstream)
        self.down = False
        self.requests = 0
        self.injected: list[Injected] = []
        self._script: deque[str | None] = deque()
        self._lock = threading.Lock()
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        assert self._server is not None, "start() the proxy first"
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    def start(self) -> FaultProxy:
        self._server = _Server(self)
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def script(self, faults: list[str | None]) -> None:
        """What the next requests get, in order (None: forwarded); then they are forwarded."""
        unknown = [f for f in faults if f is not None and f not in FAULTS]
        assert not unknown, f"unknown faults {unknown} (known: {', '.join(FAULTS)})"
        with self._lock:
            self._script = deque(faults)

    def reset_counts(self) -> None:
        with self._lock:
            self.requests = 0
            self.injected = []

    def next_fault(self, method: str, path: str) -> str | None:
        with self._lock:
            self.requests += 1
            fault = "slowdown" if self.down else (self._script.popleft() if self._script else None)
            if fault == "truncated" and method != "GET":  # kept for the next body to cut
                self._script.appendleft(fault)
                return None
            if fault is not None:
                self.injected.append(Injected(fault, method, path))
            return fault

    def __enter__(self) -> FaultProxy:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
