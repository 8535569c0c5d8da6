"""The guarded CDP endpoint external agents attach to.

Agents that bring their own browser logic (a command-line agent, Browser Use) drive the run's
Chromium over the DevTools protocol. They get this endpoint, never Chromium's own: it forwards
every message both ways, but answers the calls that would take the browser away from the
harness itself and records them: closing or crashing the browser gets an empty success (the
agent goes on as if it had), closing the page the harness scores or opening a browser context
of its own gets an error. A Browser Use with keep_alive=False, or any agent that
"cleans up" before returning, then leaves the page in place for the harness to observe and
score: the lifecycle false negative of seed 001 cannot happen.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from http import HTTPStatus
from typing import Any

from websockets.asyncio.client import connect
from websockets.asyncio.server import Server, ServerConnection, serve
from websockets.exceptions import ConnectionClosed

from newsbench_dagster.core.web.network import async_client

# Taken from the agent: the browser's life belongs to the harness.
SWALLOWED = frozenset({"Browser.close", "Browser.crash", "Browser.crashGpuProcess"})
# Refused with an error: a context of the agent's own would escape the harness's request
# guard (allowlist, robots.txt, accounting) and its observation.
REFUSED = frozenset({"Target.createBrowserContext"})
REASONS = {
    "Target.createBrowserContext": "work in the browser context you were given",
    "Target.closeTarget": "the harness scores this page; leave it open",
    "Page.close": "the harness scores this page; leave it open",
}


class CdpGuard:
    """A loopback CDP endpoint in front of Chromium's debugging port `upstream_port`.

    `protected_targets` are target ids (the harness's page) the agent may not close.
    `events` lists every swallowed call, `messages` counts what the agent sent.
    """

    def __init__(self, upstream_port: int, protected_targets: set[str] | None = None) -> None:
        self.upstream = f"127.0.0.1:{upstream_port}"
        self.protected_targets = protected_targets or set()
        self.events: list[dict[str, Any]] = []
        self.messages = 0
        self._server: Server | None = None
        self._port: int | None = None
        self._session_targets: dict[str, str] = {}  # CDP session id -> target id

    @property
    def url(self) -> str:
        if self._port is None:
            raise RuntimeError("CdpGuard not started")
        return f"http://127.0.0.1:{self._port}"

    async def start(self) -> str:
        self._server = await serve(
            self._relay,
            "127.0.0.1",
            0,
            process_request=self._http,
            max_size=None,  # screenshots and DOM dumps exceed the 1 MiB default
            ping_interval=None,
            compression=None,
        )
        self._port = next(iter(self._server.sockets)).getsockname()[1]
        return self.url

    async def stop(self) -> None:
        if self._server is not None:
            self._server.close()
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self._server.wait_closed(), 5)
            self._server = None

    async def __aenter__(self) -> CdpGuard:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()

    # -- HTTP discovery (/json/version, /json/list) --------------------------------------------
    def _rewrite(self, value: Any) -> Any:
        """Upstream discovery JSON with every debugger URL pointing at this guard instead."""
        text = json.dumps(value).replace(f"ws://{self.upstream}", f"ws://127.0.0.1:{self._port}")
        return json.loads(text.replace(f"//{self.upstream}/", f"//127.0.0.1:{self._port}/"))

    async def _http(self, connection: ServerConnection, request):
        if request.headers.get("Upgrade", "").lower() == "websocket":
            return None
        path = request.path.rstrip("/") or "/"
        if not path.startswith("/json"):
            return connection.respond(HTTPStatus.NOT_FOUND, "not found\n")
        if path.startswith(("/json/new", "/json/close", "/json/activate")):
            # Only read-only discovery over HTTP; everything else goes through the socket.
            self.events.append({"kind": "http_refused", "path": path, "t": time.time()})
            return connection.respond(HTTPStatus.FORBIDDEN, "refused by the harness\n")
        async with async_client(timeout=5) as client:
            upstream = await client.get(f"http://{self.upstream}{path}")
        response = connection.respond(
            HTTPStatus(upstream.status_code), json.dumps(self._rewrite(upstream.json()))
        )
        response.headers["Content-Type"] = "application/json"
        return response

    # -- the socket ----------------------------------------------------------------------------
    def _refusal(self, message: dict) -> dict | None:
        method = message.get("method")
        if method in SWALLOWED:
            return {"kind": "swallowed", "method": method}
        if method in REFUSED:
            return {"kind": "refused", "method": method}
        if method in ("Target.closeTarget", "Page.close"):
            if method == "Page.close":  # sent on a session attached to the page
                target = self._session_targets.get(message.get("sessionId"))
            else:
                target = (message.get("params") or {}).get("targetId")
            if target in self.protected_targets:
                # Refused, not swallowed: a client that closes a page waits for it to go,
                # and would wait forever.
                return {"kind": "refused", "method": method, "target": target}
        return None

    async def _relay(self, client: ServerConnection) -> None:
        path = client.request.path if client.request else "/"
        try:
            upstream = await connect(
                f"ws://{self.upstream}{path}", max_size=None, ping_interval=None, compression=None
            )
        except OSError:
            await client.close(1011, "browser gone")
            return

        async def agent_to_browser() -> None:
            async for raw in client:
                self.messages += 1
                try:
                    message = json.loads(raw)
                except ValueError:
                    message = {}
                refusal = self._refusal(message) if isinstance(message, dict) else None
                if refusal is None:
                    await upstream.send(raw)
                    continue
                self.events.append({**refusal, "t": time.time()})
                reply: dict[str, Any] = {"id": message.get("id"), "result": {}}
                if refusal["kind"] == "refused":
                    reply = {
                        "id": message.get("id"),
                        "error": {
                            "code": -32000,
                            "message": f"{refusal['method']} is refused by the harness: "
                            + REASONS.get(refusal["method"], "not allowed"),
                        },
                    }
                if "sessionId" in message:
                    reply["sessionId"] = message["sessionId"]
                await client.send(json.dumps(reply))

        async def browser_to_agent() -> None:
            async for raw in upstream:
                if "Target.attachedToTarget" in raw:  # learn which session drives which page
                    with contextlib.suppress(ValueError, KeyError, TypeError):
                        params = json.loads(raw)["params"]
                        self._session_targets[params["sessionId"]] = params["targetInfo"][
                            "targetId"
                        ]
                await client.send(raw)

        pumps = [asyncio.create_task(agent_to_browser()), asyncio.create_task(browser_to_agent())]
        try:
            await asyncio.wait(pumps, return_when=asyncio.FIRST_COMPLETED)
        except ConnectionClosed:
            pass
        finally:
            for pump in pumps:
                pump.cancel()
            for pump in pumps:
                with contextlib.suppress(asyncio.CancelledError, ConnectionClosed, Exception):
                    await pump
            await upstream.close()
