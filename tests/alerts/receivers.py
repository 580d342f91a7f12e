"""Real local receivers for the delivery tests: an HTTP server (Slack-shaped and JSON webhook
POSTs) in a thread, and an SMTP server (aiosmtpd) that requires a login."""

from __future__ import annotations

import json
import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from aiosmtpd.controller import Controller
from aiosmtpd.smtp import AuthResult, LoginPassword


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class HttpReceiver:
    port: int
    posts: list[tuple[str, dict[str, str], Any]] = field(default_factory=list)

    def bodies(self, path: str) -> list[Any]:
        return [body for p, _h, body in self.posts if p == path]


@contextmanager
def http_receiver(port: int | None = None) -> Iterator[HttpReceiver]:
    """Records every POST (path, headers, JSON body) and answers 200 `ok`, as Slack does."""
    rec = HttpReceiver(port or free_port())

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802 (http.server's name)
            length = int(self.headers.get("Content-Length", "0"))
            body = json.loads(self.rfile.read(length) or b"null")
            rec.posts.append((self.path, dict(self.headers), body))
            self.send_response(200)
            self.end_headers()
            self.wfile.write(b"ok")

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", rec.port), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield rec
    finally:
        server.shutdown()
        server.server_close()


@dataclass
class SmtpReceiver:
    port: int
    user: str
    password: str
    messages: list[Any] = field(default_factory=list)


class _Handler:
    def __init__(self, rec: SmtpReceiver) -> None:
        self.rec = rec

    async def handle_DATA(self, server: Any, session: Any, envelope: Any) -> str:  # noqa: N802
        self.rec.messages.append(envelope)
        return "250 OK"


@contextmanager
def smtp_receiver(user: str, password: str) -> Iterator[SmtpReceiver]:
    """aiosmtpd on a free port; AUTH LOGIN/PLAIN with `user`/`password` required (plain
    connection: the test server has no certificate)."""
    rec = SmtpReceiver(free_port(), user, password)

    def authenticator(server: Any, session: Any, envelope: Any, mechanism: str, auth_data: Any):
        ok = (
            isinstance(auth_data, LoginPassword)
            and auth_data.login.decode() == user
            and auth_data.password.decode() == password
        )
        return AuthResult(success=ok, handled=False)

    controller = Controller(
        _Handler(rec),
        hostname="127.0.0.1",
        port=rec.port,
        authenticator=authenticator,
        auth_required=True,
        auth_require_tls=False,
    )
    controller.start()
    try:
        yield rec
    finally:
        controller.stop()
