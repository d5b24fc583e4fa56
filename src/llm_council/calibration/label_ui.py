"""The labelling web UI: a stdlib HTTP server on 127.0.0.1 serving one page and a JSON API.

Loopback only (no option to bind elsewhere) and the ``Host`` header must name the
loopback address, so a web page elsewhere cannot reach it through DNS rebinding.

Cross-site request forgery: a page on another origin can still make the browser send a
POST to 127.0.0.1 (a "simple" request with ``Content-Type: text/plain`` needs no CORS
pre-flight). A label is therefore accepted only when all of these hold: the request says
``Content-Type: application/json`` (which a cross-origin page cannot send without a
pre-flight this server never approves), its ``Origin`` (when sent) is this server's own,
``Sec-Fetch-Site`` (when sent) is ``same-origin`` or ``none``, and it carries the per-run
token that is embedded in the page and nowhere else (``X-Label-Token``).
"""

from __future__ import annotations

import hmac
import json
import secrets
import sys
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
TOKEN_HEADER = "X-Label-Token"
_SAME_SITE_FETCH = ("same-origin", "none")


def _page(token: str) -> bytes:
    return LABEL_PAGE_HTML.replace("__LABEL_TOKEN__", token).encode("utf-8")


class _BadRequest(Exception):
    """A request this server refuses; carries the status and a one-line reason."""

    def __init__(self, status: HTTPStatus, reason: str) -> None:
        super().__init__(reason)
        self.status = status
        self.reason = reason


class _Handler(BaseHTTPRequestHandler):
    store: LabelStore  # set on the subclass made per server
    token: str  # the per-run token embedded in the page

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

    def _own_origins(self) -> set[str]:
        port = self.server.server_address[1]  # type: ignore[index]  # AF_INET: (host, port)
        return {f"http://{host}:{port}" for host in _ALLOWED_HOSTS}

    def _check_same_origin_post(self) -> None:
        """Refuse a cross-site POST (see the module docstring for why each check)."""
        origin = self.headers.get("Origin")
        if origin is not None and origin not in self._own_origins():
            raise _BadRequest(HTTPStatus.FORBIDDEN, f"cross-origin request from {origin!r}")
        fetch_site = self.headers.get("Sec-Fetch-Site")
        if fetch_site is not None and fetch_site not in _SAME_SITE_FETCH:
            raise _BadRequest(HTTPStatus.FORBIDDEN, f"cross-site request ({fetch_site})")
        media_type = (self.headers.get("Content-Type") or "").split(";")[0].strip().lower()
        if media_type != "application/json":
            raise _BadRequest(HTTPStatus.UNSUPPORTED_MEDIA_TYPE, "Content-Type must be JSON")
        given = self.headers.get(TOKEN_HEADER) or ""
        if not hmac.compare_digest(given.encode(), self.token.encode()):
            raise _BadRequest(HTTPStatus.FORBIDDEN, f"missing or wrong {TOKEN_HEADER}")

    def _read_label_body(self) -> tuple[str, Any, str]:
        """``(pair id, choice, reason)`` from the JSON body, or :class:`_BadRequest`."""
        raw_length = (self.headers.get("Content-Length") or "").strip()
        if not raw_length.isdigit():
            raise _BadRequest(HTTPStatus.BAD_REQUEST, "Content-Length must be a number")
        length = int(raw_length)
        if length <= 0 or length > _MAX_BODY:
            raise _BadRequest(HTTPStatus.BAD_REQUEST, "bad body length")
        try:
            body = json.loads(self.rfile.read(length).decode("utf-8"))
            pair_id, choice = str(body["id"]), body["choice"]
            reason = str(body.get("reason") or "")[:2000]
        except (ValueError, KeyError, TypeError, AttributeError, RecursionError):
            # ValueError covers invalid JSON and invalid UTF-8; RecursionError deep nesting
            raise _BadRequest(
                HTTPStatus.BAD_REQUEST, "expected a JSON object {id, choice, reason}"
            ) from None
        return pair_id, choice, reason

    def do_GET(self) -> None:  # noqa: N802 - stdlib name
        if not self._host_ok():
            self._json(HTTPStatus.FORBIDDEN, {"error": "loopback host only"})
        elif self.path == "/":
            self._send(HTTPStatus.OK, _page(self.token), "text/html; charset=utf-8")
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
        try:
            self._check_same_origin_post()
            pair_id, choice, reason = self._read_label_body()
        except _BadRequest as refused:
            self.close_connection = True  # an unread body must not be taken as a request
            self._json(refused.status, {"error": refused.reason})
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
    token = secrets.token_urlsafe(32)
    handler = type("LabelHandler", (_Handler,), {"store": store, "token": token})
    server = _QuietServer((LOOPBACK, port), handler)
    server.daemon_threads = True
    return server


class _QuietServer(ThreadingHTTPServer):
    """A request that still breaks the handler costs one line on stderr, not a traceback."""

    def handle_error(self, request: Any, client_address: Any) -> None:
        error = sys.exc_info()[1]
        print(f"label-ui: dropped a request: {type(error).__name__}", file=sys.stderr)


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
