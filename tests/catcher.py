"""An HTTP server on 127.0.0.1 that answers nothing useful and counts every request
(any method): what a hostile results folder would like a command to talk to."""

from __future__ import annotations

import http.server
import threading
from types import TracebackType


class Catcher:
    """A context manager serving on a free loopback port; `requests` counts every
    request line received, `paths` lists them."""

    def __init__(self) -> None:
        self.requests = 0
        self.paths: list[str] = []
        catcher = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def _count(self) -> None:
                catcher.requests += 1
                catcher.paths.append(f"{self.command} {self.path}")
                self.send_response(404)
                self.send_header("Content-Length", "0")
                self.end_headers()

            do_GET = do_POST = do_PUT = do_HEAD = do_DELETE = _count

            def log_message(self, *args: object) -> None:
                pass

        self._server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        """The server's base URL."""
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def __enter__(self) -> Catcher:
        self._thread.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._server.shutdown()
        self._server.server_close()
