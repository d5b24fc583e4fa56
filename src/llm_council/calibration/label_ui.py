"""The labelling web UI: a stdlib HTTP server on 127.0.0.1 serving one page and a JSON API.

Loopback only (no option to bind elsewhere) and the ``Host`` header must name the
loopback address, so a web page elsewhere cannot reach it through DNS rebinding.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Sequence
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from llm_council.calibration.label_store import LabelStore, left_side
from llm_council.calibration.label_ui_page import LABEL_PAGE_HTML
from llm_council.calibration.pairs import Pair
from llm_council.errors import ConfigError

LOOPBACK = "127.0.0.1"
_ALLOWED_HOSTS = ("127.0.0.1", "localhost")
_MAX_BODY = 64 * 1024


def _page() -> bytes:
    return LABEL_PAGE_HTML.encode("utf-8")


class _Handler(BaseHTTPRequestHandler):
    store: LabelStore  # set on the subclass made per server

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - stdlib signature
        return  # keep the terminal quiet; labels are in the output file

    def _host_ok(self) -> bool:
        host = (self.headers.get("Host") or "").rsplit(":", 1)[0].strip("[]")
        return host in _ALLOWED_HOSTS

    def _send(self, status: HTTPStatus, body: bytes, content_type: str) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Cache-Control", "no-store")
        self.send_header("X-Content-Type-Options", "nosniff")
        self.end_headers()
        self.wfile.write(body)

    def _json(self, status: HTTPStatus, document: Any) -> None:
        self._send(status, json.dumps(document).encode(), "application/json")

    def _state(self) -> dict[str, Any]:
        pair = self.store.next_pair()
        state: dict[str, Any] = {"progress": self.store.progress(), "pair": None}
        if pair is not None:
            left = left_side(pair.pair_id, self.store.seed)
            state["pair"] = {
                "id": pair.pair_id,
                "prompt": pair.prompt,
                "left": pair.response(left),
                "right": pair.response("b" if left == "a" else "a"),
            }
        return state

    def do_GET(self) -> None:  # noqa: N802 - stdlib name
        if not self._host_ok():
            self._json(HTTPStatus.FORBIDDEN, {"error": "loopback host only"})
        elif self.path == "/":
            self._send(HTTPStatus.OK, _page(), "text/html; charset=utf-8")
        elif self.path == "/api/state":
            self._json(HTTPStatus.OK, self._state())
        else:
            self._json(HTTPStatus.NOT_FOUND, {"error": "not found"})

    def do_POST(self) -> None:  # noqa: N802 - stdlib name
        if not self._host_ok():
            self._json(HTTPStatus.FORBIDDEN, {"error": "loopback host only"})
            return
        if self.path != "/api/label":
            self._json(HTTPStatus.NOT_FOUND, {"error": "not found"})
            return
        length = int(self.headers.get("Content-Length") or 0)
        if length <= 0 or length > _MAX_BODY:
            self._json(HTTPStatus.BAD_REQUEST, {"error": "bad body length"})
            return
        try:
            body = json.loads(self.rfile.read(length))
            pair_id, choice = str(body["id"]), body["choice"]
            reason = str(body.get("reason") or "")[:2000]
        except (json.JSONDecodeError, KeyError, TypeError):
            self._json(HTTPStatus.BAD_REQUEST, {"error": "expected {id, choice, reason}"})
            return
        if choice not in ("left", "right", "tie"):
            self._json(
                HTTPStatus.BAD_REQUEST,
                {"error": f"choice must be left, right or tie, got {choice!r}"},
            )
            return
        try:
            saved = self.store.record(pair_id, choice, reason)
        except KeyError:
            self._json(HTTPStatus.NOT_FOUND, {"error": f"unknown pair id {pair_id!r}"})
            return
        self._json(HTTPStatus.OK, {**saved, **self._state()})


def make_server(
    pairs: Sequence[Pair], output: Path, *, port: int = 0, seed: int = 0
) -> ThreadingHTTPServer:
    """A server bound to 127.0.0.1:``port`` (0 = a free port); call ``serve_forever`` on it."""
    store = LabelStore(pairs, output, seed)
    handler = type("LabelHandler", (_Handler,), {"store": store})
    server = ThreadingHTTPServer((LOOPBACK, port), handler)
    server.daemon_threads = True
    return server


def start_in_thread(
    pairs: Sequence[Pair], output: Path, *, port: int = 0, seed: int = 0
) -> ThreadingHTTPServer:
    """Start a server on a background thread (tests, notebooks); stop with ``shutdown()``."""
    server = make_server(pairs, output, port=port, seed=seed)
    threading.Thread(target=server.serve_forever, name="label-ui", daemon=True).start()
    return server


def serve_forever(pairs: Sequence[Pair], output: Path, *, port: int = 8765, seed: int = 0) -> None:
    """Serve until Ctrl-C; the URL is printed (and flushed) first so scripts can read it."""
    try:
        server = make_server(pairs, output, port=port, seed=seed)
    except OSError as error:
        raise ConfigError(
            f"cannot listen on {LOOPBACK}:{port}: {error.strerror or error}"
        ) from None
    host, bound_port = str(server.server_address[0]), int(server.server_address[1])
    print(
        f"Labelling {len(pairs)} pairs at http://{host}:{bound_port}/"
        "  (Ctrl-C to stop; every label is saved as you give it)",
        flush=True,
    )
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
