"""Loopback ports for tests that start servers: each its own, so test files running at once on
different workers never meet each other's newsroom or webserver."""

from __future__ import annotations

import socket


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]
