"""Attacks on the label UI that once worked: cross-site writes, malformed bodies, torn lines.

Each test reproduces the attack as reported (issue 10, items 10 and 11) against the real
server on 127.0.0.1 and fails on the code before the fix.
"""

from __future__ import annotations

import http.client
import json
import socket
import subprocess
import sys
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from llm_council.calibration.label_store import LabelStore
from llm_council.calibration.label_ui import start_in_thread
from llm_council.calibration.pairs import Pair, read_pairs

from .conftest import simulated_pair_records, write_jsonl
from .test_label_ui import page_token


@pytest.fixture
def pairs(tmp_path: Path) -> list[Pair]:
    return read_pairs(write_jsonl(tmp_path / "pairs.jsonl", simulated_pair_records(4, seed=21)))


@pytest.fixture
def label_server(pairs: list[Pair], tmp_path: Path) -> Iterator[tuple[str, Path]]:
    output = tmp_path / "out.jsonl"
    server = start_in_thread(pairs, output)
    host, port = server.server_address[:2]
    yield f"http://{host}:{port}", output
    server.shutdown()
    server.server_close()


def _post(base: str, body: bytes, headers: dict[str, str]) -> tuple[int, dict[str, Any]]:
    host, port = base.removeprefix("http://").split(":")
    connection = http.client.HTTPConnection(host, int(port), timeout=30)
    try:
        connection.putrequest("POST", "/api/label", skip_accept_encoding=True)
        for name, value in headers.items():
            connection.putheader(name, value)
        connection.endheaders(body)
        response = connection.getresponse()
        return response.status, json.loads(response.read())
    finally:
        connection.close()


def test_cross_origin_text_plain_post_is_refused(
    pairs: list[Pair], label_server: tuple[str, Path]
) -> None:
    """The report's curl: Origin evil.example, Content-Type text/plain, a valid label body."""
    base, output = label_server
    body = json.dumps({"id": pairs[0].pair_id, "choice": "left"}).encode()
    attack = {
        "Origin": "http://evil.example",
        "Content-Type": "text/plain",
        "Content-Length": str(len(body)),
    }
    assert _post(base, body, attack)[0] in (403, 415)
    # each defence holds on its own: even a guessed JSON content type or a forged token fails
    as_json = {**attack, "Content-Type": "application/json"}
    assert _post(base, body, as_json)[0] == 403
    no_origin_no_token = {"Content-Type": "application/json", "Content-Length": str(len(body))}
    assert _post(base, body, no_origin_no_token)[0] == 403
    token = page_token(base)
    cross_site = {**no_origin_no_token, "X-Label-Token": token, "Sec-Fetch-Site": "cross-site"}
    assert _post(base, body, cross_site)[0] == 403
    wrong_type = {**no_origin_no_token, "X-Label-Token": token, "Content-Type": "text/plain"}
    assert _post(base, body, wrong_type)[0] == 415
    assert not output.exists() or output.read_text() == ""
    # the page's own request (same origin, JSON, its token) is accepted
    own = {**no_origin_no_token, "X-Label-Token": token, "Origin": base}
    assert _post(base, body, own)[0] == 200
    assert json.loads(output.read_text())["id"] == pairs[0].pair_id


def _raw_exchange(base: str, request: bytes) -> bytes:
    host, port = base.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=30) as connection:
        connection.sendall(request)
        connection.shutdown(socket.SHUT_WR)
        chunks = []
        while chunk := connection.recv(65536):
            chunks.append(chunk)
    return b"".join(chunks)


@pytest.mark.parametrize(
    ("length_header", "body"),
    [
        ("abc", b'{"id": "x", "choice": "tie"}'),
        (None, b"[" * 60_000),
        (None, b'{"id": "\xff\xfe", "choice": "tie"}'),
    ],
    ids=["content-length-abc", "60000-brackets", "invalid-utf8"],
)
def test_malformed_bodies_answer_400_without_a_traceback(
    length_header: str | None, body: bytes, tmp_path: Path
) -> None:
    """Run the real command in a subprocess so its stderr can be read."""
    pairs_path = write_jsonl(tmp_path / "pairs.jsonl", simulated_pair_records(2, seed=22))
    command = [
        sys.executable,
        "-c",
        "from llm_council.cli.app import main; main()",
        "label-ui",
        str(pairs_path),
        "--output",
        str(tmp_path / "out.jsonl"),
        "--port",
        "0",
    ]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert process.stdout is not None
        base = process.stdout.readline().split(" at ")[1].split()[0].rstrip("/")
        token = page_token(base)
        length = length_header if length_header is not None else str(len(body))
        head = (
            f"POST /api/label HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
            f"X-Label-Token: {token}\r\nContent-Length: {length}\r\n\r\n"
        ).encode()
        reply = _raw_exchange(base, head + body)
        assert reply.startswith(b"HTTP/1.0 400") or reply.startswith(b"HTTP/1.1 400"), reply[:80]
    finally:
        process.terminate()
        _, stderr = process.communicate(timeout=60)
    assert "Traceback" not in stderr


def test_torn_last_line_is_repaired_once_and_every_reader_accepts_the_file(
    pairs: list[Pair], tmp_path: Path
) -> None:
    output = tmp_path / "reviewed.jsonl"
    store = LabelStore(pairs, output)
    store.record(pairs[0].pair_id, "left", "")
    store.record(pairs[1].pair_id, "tie", "")
    good = output.read_bytes()
    output.write_bytes(good + b'{"id": "' + pairs[2].pair_id.encode() + b'", "respo')  # SIGKILL

    with pytest.warns(UserWarning, match=r"reviewed\.jsonl:3: removed a torn last line"):
        first_restart = LabelStore(pairs, output)
    assert output.read_bytes() == good
    assert b'"respo' in (tmp_path / "reviewed.jsonl.torn").read_bytes()
    first_restart.record(pairs[2].pair_id, "right", "")
    # the second restart (which used to refuse the file) and calibrate's reader are clean
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        second_restart = LabelStore(pairs, output)
        labelled = read_pairs(output)
    assert second_restart.progress() == {"labelled": 3, "total": 4}
    assert [pair.pair_id for pair in labelled] == [p.pair_id for p in pairs[:3]]


def test_a_complete_last_line_without_newline_is_kept(pairs: list[Pair], tmp_path: Path) -> None:
    output = tmp_path / "reviewed.jsonl"
    LabelStore(pairs, output).record(pairs[0].pair_id, "left", "")
    output.write_bytes(output.read_bytes().rstrip(b"\n"))
    store = LabelStore(pairs, output)
    store.record(pairs[1].pair_id, "tie", "")
    assert [p.pair_id for p in read_pairs(output)] == [pairs[0].pair_id, pairs[1].pair_id]
