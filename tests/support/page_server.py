"""A loopback HTTP server that answers with fixed pages: the browser's only way out (as its
proxy), so a page can be given any real-looking URL. The page whose path suffix matches the
request's path is served; the first one answers everything else."""

from __future__ import annotations

import threading
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


@contextmanager
def serving(pages: Mapping[str, str]) -> Iterator[ThreadingHTTPServer]:
    """Serve `pages` (path suffix -> HTML) until the block ends; the server's `address` is
    its http://127.0.0.1:PORT."""
    ordered = list(pages.items())

    class Page(BaseHTTPRequestHandler):
        def do_GET(self):  # noqa: N802 - the http.server API
            path = self.path.split("?")[0]
            html = next((h for suffix, h in ordered if path.endswith(suffix)), ordered[0][1])
            body = html.encode()
            self.send_response(200)
            self.send_header("content-type", "text/html; charset=utf-8")
            self.send_header("content-length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Page)
    server.address = f"http://127.0.0.1:{server.server_port}"
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()
