"""Loopback helpers: free ports, waiting for a server, running an ASGI app on real HTTP in a thread."""

from __future__ import annotations

import socket
import threading
import time
from urllib.parse import urlsplit

import httpx
import uvicorn


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_http(url: str, timeout: float = 30, ok: tuple[int, ...] = (200,)) -> None:
    deadline = time.monotonic() + timeout
    last: object = None
    while time.monotonic() < deadline:
        try:
            r = httpx.get(url, timeout=2)
            if r.status_code in ok:
                return
            last = r.status_code
        except httpx.HTTPError as e:
            last = e
        time.sleep(0.05)
    raise TimeoutError(f"{url} not ready: {last}")


class ServerThread:
    """uvicorn serving `app` on 127.0.0.1:<free port> in a daemon thread; real sockets, real HTTP."""

    def __init__(self, app, port: int | None = None, **config) -> None:
        self.port = port or free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        cfg = uvicorn.Config(app, host="127.0.0.1", port=self.port, log_level="warning", **config)
        self.server = uvicorn.Server(cfg)
        self.thread = threading.Thread(target=self.server.run, daemon=True)

    def __enter__(self) -> ServerThread:
        self.thread.start()
        deadline = time.monotonic() + 30
        while not self.server.started:
            if not self.thread.is_alive() or time.monotonic() > deadline:
                raise RuntimeError("server thread failed to start")
            time.sleep(0.01)
        return self

    def __exit__(self, *exc) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=10)


def send_head(url: str, head: str, timeout: float = 5) -> tuple[int, bytes]:
    """POST-style request line and headers only (``head``, lines joined by ``\\n``), never a body: returns
    the answer's (status, body). Shows a server answering before it has read what it was promised."""
    parts = urlsplit(url)
    assert parts.hostname and parts.port
    with socket.create_connection((parts.hostname, parts.port), timeout=timeout) as s:
        s.sendall(head.replace("\n", "\r\n").encode() + b"\r\n")
        answer = b""
        while True:
            header, _, body = answer.partition(b"\r\n\r\n")
            if _ and len(body) >= _content_length(header):
                break
            chunk = s.recv(65536)
            if not chunk:
                break
            answer += chunk
    return int(answer.split(b" ", 2)[1]), body


def _content_length(header: bytes) -> int:
    for line in header.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            return int(value)
    return 0
