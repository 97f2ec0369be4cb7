"""`kmc explore`: walk any model's state space by hand, in the browser.

The standard library's ThreadingHTTPServer, bound to 127.0.0.1, with a small JSON API over an
:class:`~kmc.checker.explorer.state.Explorer`; the page (``explore_page.PAGE``) is plain HTML, CSS
and JavaScript that fetches nothing from elsewhere. Every failure is answered as JSON with a
message, which the page shows; nothing is checked late that could be checked before serving.
"""

from __future__ import annotations

import errno
import json
import sys
import threading
from collections.abc import Mapping, Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

from kmc.checker.errors import UserError
from kmc.checker.explorer.state import Explorer, PathError, check_path
from kmc.checker.traces.itf import read_trace

__all__ = ["HOST", "ExploreServer", "Explorer", "PathError", "make_server", "serve_in_thread"]

HOST = "127.0.0.1"
MAX_BODY = 64 * 1024 * 1024


class ExploreServer(ThreadingHTTPServer):
    """The HTTP server of one explorer; every request runs in its own (daemon) thread."""

    daemon_threads = True
    allow_reuse_address = False  # a port in use must be an error, not silently shared

    def __init__(self, explorer: Explorer, port: int, quiet: bool = True) -> None:
        self.explorer = explorer
        self.quiet = quiet
        super().__init__((HOST, port), _Handler)

    @property
    def url(self) -> str:
        return f"http://{HOST}:{self.server_address[1]}/"


class _Handler(BaseHTTPRequestHandler):
    server: ExploreServer
    protocol_version = "HTTP/1.1"
    server_version = "kmc-explore"

    def log_message(self, format: str, *args: Any) -> None:
        if not self.server.quiet:
            super().log_message(format, *args)

    # -- answers -------------------------------------------------------------------------------
    def _send(self, status: int, body: bytes, content_type: str, headers: Mapping[str, str] | None = None) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Cache-Control", "no-store")
        for key, value in (headers or {}).items():
            self.send_header(key, value)
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def _json(self, status: int, data: Any) -> None:
        self._send(status, json.dumps(data).encode(), "application/json; charset=utf-8")

    def _error(self, status: int, message: str) -> None:
        self._json(status, {"error": message})

    def _guarded(self, run: Any) -> None:
        """Every failure is a JSON answer with a message; never a traceback in the browser."""
        try:
            run()
        except UserError as exc:
            self._error(400, str(exc))
        except (BrokenPipeError, ConnectionResetError):
            pass
        except Exception as exc:  # a bug or a model's own exception: one line, here and on the page
            print(f"kmc explore: internal error: {type(exc).__name__}: {exc}", file=sys.stderr)
            self._error(500, f"internal error: {type(exc).__name__}: {exc}")

    # -- routes --------------------------------------------------------------------------------
    def do_GET(self) -> None:
        self._guarded(self._get)

    def do_HEAD(self) -> None:
        self._guarded(self._get)

    def do_POST(self) -> None:
        self._guarded(self._post)

    def _get(self) -> None:
        from kmc.checker.explorer.page import PAGE

        url = urlsplit(self.path)
        explorer = self.server.explorer
        if url.path in ("/", "/index.html"):
            self._send(200, PAGE.encode(), "text/html; charset=utf-8")
        elif url.path == "/favicon.ico":
            self._send(204, b"", "image/x-icon")
        elif url.path == "/api/model":
            self._json(200, explorer.info())
        elif url.path == "/api/itf":
            query = parse_qs(url.query)
            path = check_path(query.get("path", [""])[0])
            doc = explorer.itf(path)
            name = explorer.itf_filename(path)
            self._send(
                200,
                (json.dumps(doc, indent=1) + "\n").encode(),
                "application/json; charset=utf-8",
                {"Content-Disposition": f'attachment; filename="{name}"'},
            )
        else:
            self._error(404, f"no such page: {url.path}")

    def _post(self) -> None:
        explorer = self.server.explorer
        route = urlsplit(self.path).path
        length = int(self.headers.get("Content-Length") or 0)
        if length > MAX_BODY:
            self.close_connection = True
            raise UserError(f"request too large ({length:,} bytes)")
        raw = self.rfile.read(length) if length else b""
        try:
            body = json.loads(raw or b"{}")
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            raise UserError(f"the request is not JSON: {exc}") from None
        if not isinstance(body, dict):
            raise UserError("the request must be a JSON object")
        if route == "/api/view":
            self._json(200, explorer.view(body.get("path"), body.get("at")))
        elif route == "/api/resolve":
            self._json(200, {"path": explorer.from_tokens(body.get("init", 0), body.get("steps", []))})
        elif route == "/api/chart":
            self._json(200, {"svg": explorer.chart(body.get("path"))})
        elif route == "/api/walk":
            self._json(
                200,
                explorer.walk(
                    body.get("path"),
                    body.get("at", 0),
                    body.get("steps", 10),
                    body.get("seed"),
                    bool(body.get("stop_on_violation", True)),
                ),
            )
        elif route == "/api/shortest":
            self._json(200, explorer.shortest(body.get("path"), body.get("at", 0), body.get("max_states")))
        elif route == "/api/open":
            self._json(200, explorer.open_trace(body.get("doc"), str(body.get("name") or "the trace")))
        else:
            self._error(404, f"no such API: {route}")


def make_server(
    model: str,
    preset: str | None = None,
    overrides: Mapping[str, Any] | None = None,
    spec_files: Sequence[str | Path] = (),
    trace: str | Path | None = None,
    port: int = 0,
    quiet: bool = True,
) -> ExploreServer:
    """Check everything (model, preset, config, specs, trace, port) and bind the port, before any
    serving: every problem is a UserError here, never a broken page later."""
    if not 0 <= port <= 65535:
        raise UserError(f"--port must be between 0 and 65535, not {port}")
    explorer = Explorer(model, preset, overrides, spec_files)
    if trace is not None:
        opened = explorer.open_trace(read_trace(trace), str(trace))
        explorer.start = opened
    try:
        return ExploreServer(explorer, port, quiet=quiet)
    except OSError as exc:
        if exc.errno == errno.EADDRINUSE:
            raise UserError(
                f"port {port} on {HOST} is in use: choose another with --port, or --port 0 for any free one"
            ) from None
        raise UserError(f"cannot listen on {HOST}:{port}: {exc.strerror or exc}") from None


def serve_in_thread(server: ExploreServer) -> threading.Thread:
    """Serve in a daemon thread (for tests and embedding); stop with ``server.shutdown()``."""
    thread = threading.Thread(target=server.serve_forever, name="kmc-explore", daemon=True)
    thread.start()
    return thread
