"""Reusing or starting a newsroom on a port, and refusing a different world."""

from __future__ import annotations

import socket

import pytest

from newsbench_dagster.newsroom.launcher import NewsroomUnavailable, ensure_newsroom, health
from newsbench_dagster.newsroom.server import NewsroomServer
from newsbench_dagster.newsroom.world import Newsroom


def test_reuses_a_running_newsroom(newsroom_server):
    server, doc = ensure_newsroom(newsroom_server.port, seed=newsroom_server.newsroom.seed)
    assert server is None and doc["seed"] == 7


def test_starts_one_on_a_free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    server, doc = ensure_newsroom(port, seed=7)
    try:
        assert server is not None and health(port)["revision"] == Newsroom(7).revision
    finally:
        server.stop()
    assert health(port) is None


def test_refuses_another_seed_or_a_foreign_port():
    with (
        NewsroomServer(Newsroom(seed=8)) as other,
        pytest.raises(NewsroomUnavailable, match="seed 8"),
    ):
        ensure_newsroom(other.port, seed=7)
    with socket.socket() as s:  # something that is not a newsroom holds the port
        s.bind(("127.0.0.1", 0))
        s.listen()
        with pytest.raises(NewsroomUnavailable):
            ensure_newsroom(s.getsockname()[1], seed=7)
