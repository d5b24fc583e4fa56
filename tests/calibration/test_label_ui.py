"""The labelling server: loopback only, randomized sides mapped back, durable labels, resume.

The browser test drives the real page in Debian's headless chromium through Playwright.
"""

from __future__ import annotations

import json
import re
import signal
import subprocess
import sys
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from conftest import BROWSER_WAIT_MS
from llm_council.calibration.label_store import left_side
from llm_council.calibration.label_ui import start_in_thread
from llm_council.calibration.pairs import Pair, read_pairs

from .conftest import simulated_pair_records, write_jsonl


@pytest.fixture
def pairs(tmp_path: Path) -> list[Pair]:
    return read_pairs(write_jsonl(tmp_path / "pairs.jsonl", simulated_pair_records(6, seed=11)))


@pytest.fixture
def server_factory() -> Iterator[Any]:
    servers = []

    def start(pairs: list[Pair], output: Path, seed: int = 0) -> str:
        server = start_in_thread(pairs, output, seed=seed)
        servers.append(server)
        host, port = server.server_address[:2]
        return f"http://{host}:{port}"

    yield start
    for server in servers:
        server.shutdown()
        server.server_close()


def page_token(base: str) -> str:
    """The per-run token the page embeds (what the real page sends with every label)."""
    with urllib.request.urlopen(base + "/", timeout=30) as response:
        html = response.read().decode()
    match = re.search(r'<meta name="label-token" content="([^"]+)">', html)
    assert match, "the page embeds its token"
    return match.group(1)


def _request(
    url: str, body: dict[str, Any] | None = None, host: str | None = None
) -> tuple[int, Any]:
    data = json.dumps(body).encode() if body is not None else None
    headers = {"Content-Type": "application/json"}
    if body is not None:
        headers["X-Label-Token"] = page_token(url.split("/api/")[0])
    request = urllib.request.Request(url, data=data, headers=headers)
    if host:
        request.add_unredirected_header("Host", host)
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, json.loads(response.read() or b"null")
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read())


def test_binds_loopback_and_rejects_foreign_host(
    pairs: list[Pair], tmp_path: Path, server_factory: Any
) -> None:
    base = server_factory(pairs, tmp_path / "out.jsonl")
    assert base.startswith("http://127.0.0.1:")
    status, _ = _request(base + "/api/state", host="evil.example:80")
    assert status == 403


def test_labels_map_back_through_randomized_sides_and_resume(
    pairs: list[Pair], tmp_path: Path, server_factory: Any
) -> None:
    output = tmp_path / "out.jsonl"
    base = server_factory(pairs, output, seed=5)
    status, state = _request(base + "/api/state")
    assert status == 200 and state["progress"] == {"labelled": 0, "total": 6}
    first = state["pair"]
    status, reply = _request(
        base + "/api/label", {"id": first["id"], "choice": "left", "reason": "clearer"}
    )
    assert status == 200 and reply["saved"] is True
    # the left answer is whichever original side the coin put there
    expected = left_side(first["id"], 5)
    assert reply["human_label"] == expected
    line = json.loads(output.read_text().splitlines()[0])
    assert line["human_label"] == expected and line["label_meta"]["shown_left"] == expected
    assert line["label_meta"]["reason"] == "clearer"
    assert _request(base + "/api/label", {"id": first["id"], "choice": "sideways"})[0] == 400
    assert _request(base + "/api/label", {"id": "nope", "choice": "tie"})[0] == 404
    # a new server on the same output resumes after the labelled pair
    again = server_factory(pairs, output, seed=5)
    _, resumed = _request(again + "/api/state")
    assert resumed["progress"]["labelled"] == 1 and resumed["pair"]["id"] != first["id"]
    # the output is itself a pairs file
    assert read_pairs(output)[0].human_label == expected


def test_sides_are_randomized_across_pairs() -> None:
    sides = {left_side(f"pair-{i}", 0) for i in range(40)}
    assert sides == {"a", "b"}


@pytest.mark.browser
def test_label_pairs_in_headless_chromium(
    chromium_launch_options: dict[str, Any], pairs: list[Pair], tmp_path: Path, server_factory: Any
) -> None:
    from playwright.sync_api import sync_playwright

    output = tmp_path / "reviewed.jsonl"
    base = server_factory(pairs[:3], output, seed=1)
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(**chromium_launch_options)
        try:
            page = browser.new_page()
            page.set_default_timeout(BROWSER_WAIT_MS)  # waits only catch a hang, never load
            page.goto(base + "/")
            page.wait_for_selector("text=0 / 3 labelled")
            left_text = page.inner_text("#left")
            page.fill("#reason", "more specific")
            page.click("#choose-left")
            page.wait_for_selector("text=1 / 3 labelled")
            # saved before the page moved on: the line is already on disk
            first = json.loads(output.read_text().splitlines()[0])
            assert first["label_meta"]["reason"] == "more specific"
            assert left_text.strip() == first[f"response_{first['human_label']}"].strip()
            page.keyboard.press("t")  # keyboard shortcut: tie
            page.wait_for_selector("text=2 / 3 labelled")
            page.keyboard.press("b")  # the right-hand answer
            page.wait_for_selector("text=All pairs are labelled")
            assert page.inner_text("#progress") == "3 / 3 labelled"
        finally:
            browser.close()
    lines = [json.loads(line) for line in output.read_text().splitlines()]
    assert [line["label_meta"]["choice"] for line in lines] == ["left", "tie", "right"]
    assert lines[1]["human_label"] == "tie"
    right = "b" if lines[2]["label_meta"]["shown_left"] == "a" else "a"
    assert lines[2]["human_label"] == right


def test_killed_server_loses_no_label_and_restart_resumes(tmp_path: Path) -> None:
    """The real command in a subprocess, killed with SIGKILL right after a label is confirmed."""
    pairs_path = write_jsonl(tmp_path / "pairs.jsonl", simulated_pair_records(4, seed=12))
    output = tmp_path / "reviewed.jsonl"
    command = [
        sys.executable,
        "-c",
        "from llm_council.cli.app import main; main()",
        "label-ui",
        str(pairs_path),
        "--output",
        str(output),
        "--port",
        "0",
    ]

    def start() -> tuple[subprocess.Popen[str], str]:
        # a suite launched as a background job inherits SIGINT ignored, and Python then
        # installs no KeyboardInterrupt handler: give the child the default, as a terminal does
        process = subprocess.Popen(
            command, stdout=subprocess.PIPE, text=True, preexec_fn=_default_sigint
        )
        assert process.stdout is not None
        match = re.search(r"http://127\.0\.0\.1:\d+", process.stdout.readline())
        assert match, "the command prints its URL first"
        return process, match.group(0)

    process, base = start()
    try:
        _, state = _request(base + "/api/state")
        status, _ = _request(base + "/api/label", {"id": state["pair"]["id"], "choice": "tie"})
        assert status == 200
    finally:
        process.send_signal(signal.SIGKILL)
        process.wait(timeout=60)
    assert json.loads(output.read_text().splitlines()[0])["id"] == state["pair"]["id"]
    process, base = start()
    try:
        _, resumed = _request(base + "/api/state")
        assert resumed["progress"] == {"labelled": 1, "total": 4}
    finally:
        _stop(process)


def _default_sigint() -> None:
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _stop(process: subprocess.Popen[str]) -> None:
    """Ctrl-C, then SIGKILL if the process has not gone within 30 s (a backstop: the label
    on disk and the resume are what this test checks)."""
    process.send_signal(signal.SIGINT)
    try:
        process.wait(timeout=30)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(timeout=30)
