"""The local council live: two model families served by llama.cpp on 127.0.0.1 (ADRs 0041, 0065).

A few audited sessions of ``config/local_council.toml`` (two SmolLM2-135M members, two
Gemma 3 270M: real model text, verdicts on the structured channel, the audit's
self-preference test run across the two families, records written and read back by
``bias-report``), then SmolLM2 as a pairwise judge: ``calibrate`` on a few of the shared
PRD Vicuna80 pairs, and ``probe``. Kept small (three sessions, three pairs): each server
answers one request at a time.
"""

from __future__ import annotations

import asyncio
import contextlib
import io
import json
import time
from pathlib import Path
from typing import Any

import pytest

from llm_council import run_full_council
from llm_council.cli.app import main
from llm_council.config import load_council_config
from llm_council.prompts import review_verdict_schema
from llm_council.providers.json_object_schema import (
    PAIRWISE_VERDICT_GRAMMAR,
    json_object_schema,
    score_enum,
)
from llm_council.providers.local_server import LOCAL_MODELS, model_file
from llm_council.results import CouncilResult

REPO = Path(__file__).resolve().parents[2]
CONFIG = REPO / "config" / "local_council.toml"
PRD_PAIRS = REPO / "tests" / "data" / "prd_vicuna80" / "replay_gpt4_claude_q1-8.jsonl"
SESSIONS = (
    ("Why is the sky blue?", 1),
    ("How do I make a good cup of tea?", 2),
    ("What is a prime number?", 3),
)
N_PAIRS = 3
JUDGE = ["--model", "openai:smollm2-135m", "-o", "local_model=smollm2-135m"]
# the judge's reply: a line of reasoning (at most 160 characters) and the verdict line
JUDGE_SETTINGS = ["-o", "max_tokens=96", "-o", "temperature=0"]


def run_cli(*args: str) -> tuple[int, str]:
    out = io.StringIO()
    with contextlib.redirect_stdout(out), pytest.raises(SystemExit) as exited:
        main(list(args))
    return int(exited.value.code or 0), out.getvalue()


@pytest.fixture(scope="module")
def audited_sessions(
    local_servers: Any, tmp_path_factory: pytest.TempPathFactory
) -> tuple[list[CouncilResult], Path, list[float]]:
    """Three sessions of the local council with the audit on (no live checks: CI time)."""
    assert local_servers  # both families' servers run before the first session is timed
    store = tmp_path_factory.mktemp("local_store") / "records.jsonl"
    config = load_council_config(CONFIG)
    results: list[CouncilResult] = []
    wall_s: list[float] = []
    with pytest.MonkeyPatch.context() as env:
        env.setenv("LLM_COUNCIL_BIAS_STORE", str(store))
        env.setenv("LLM_COUNCIL_BIAS_AUDIT", "true")
        for query, seed in SESSIONS:
            started = time.perf_counter()
            results.append(asyncio.run(run_full_council(query, config=config, seed=seed)))
            wall_s.append(time.perf_counter() - started)
    return results, store, wall_s


def test_llama_cpps_grammar_compiles_the_verdict_schema_we_send(local_server):
    from llama_cpp.llama_grammar import LlamaGrammar

    labels = ["Response A", "Response B", "Response C", "Response D"]
    schema = json_object_schema(review_verdict_schema(labels), score_enum([1, 10]))
    # llama.cpp falls back to "any JSON" when a schema does not convert: this must not
    grammar = LlamaGrammar.from_json_schema(json.dumps(schema), verbose=False)
    assert "Response D" in grammar._grammar
    # the rationale: no quote, backslash or control character (its default string rule
    # admits a raw newline, which json.loads rejects)
    assert r'::= [^"\\\x00-\x1f]' in grammar._grammar, grammar._grammar
    assert LlamaGrammar.from_string(PAIRWISE_VERDICT_GRAMMAR, verbose=False) is not None


def test_llama_cpps_server_reads_the_options_we_start_it_with(local_servers):
    """Parsed by the server's own command line, as ``python -m llama_cpp.server`` does: an
    option renamed upstream would fail here, not silently cost CPU (ADR 0065)."""
    import argparse

    from llama_cpp.server.cli import add_args_from_model, parse_model_from_args
    from llama_cpp.server.settings import ModelSettings, Settings

    for server in local_servers.values():
        parser = argparse.ArgumentParser()
        add_args_from_model(parser, Settings)
        settings = parse_model_from_args(
            ModelSettings, parser.parse_args(server.server_arguments())
        )
        assert settings.logits_all is False
        assert settings.n_threads == settings.n_threads_batch == 1
        assert settings.n_ctx == server.n_ctx
        assert settings.model == str(server.path)
        if server.chat_format is not None:  # Gemma's: the file has no chat template
            assert settings.chat_format == server.chat_format


def test_smollm2s_server_runs_the_q8_0_copy_of_its_q4_1_weights(local_servers):
    """llama.cpp reads the file the SmolLM2 server loads as Q8_0, and the shipped one as
    Q4_1 (``general.file_type`` 7 and 3: ``LLAMA_FTYPE_MOSTLY_Q8_0``, ``_Q4_1``)."""
    from llama_cpp import Llama

    served = local_servers["smollm2-135m"].path
    shipped = model_file(LOCAL_MODELS["smollm2-135m"])
    assert served != shipped and served.name.endswith(".q8_0.gguf"), served
    for path, file_type in ((served, "7"), (shipped, "3")):
        metadata = Llama(str(path), vocab_only=True, verbose=False).metadata
        assert metadata.get("general.file_type") == file_type, (path, metadata)
    # Gemma's Q4_K_M runs as shipped (its Q8_0 copy was no faster)
    assert local_servers["gemma3-270m"].path == model_file(LOCAL_MODELS["gemma3-270m"])


def family(spec: str) -> str:
    """The model family in a member's spec: ``openai:gemma3-270m`` -> ``gemma3``."""
    return spec.partition(":")[2].split("-")[0]


def test_the_shipped_council_mixes_two_model_families():
    config = load_council_config(CONFIG)
    families = [family(m.spec) for m in config.members]
    assert sorted(set(families)) == ["gemma3", "smollm2"], families
    for member in config.members:  # the model id and the member's name say the family
        assert member.options["local_model"].startswith(family(member.spec))
        assert member.name.startswith(family(member.spec))


def test_the_answers_are_the_models_own_text(audited_sessions):
    results, _, wall_s = audited_sessions
    n_members = len(load_council_config(CONFIG).members)
    for result in results:
        answers = [a for a in result.stage1 if a.ok]
        assert len(answers) == n_members, [a.error for a in result.stage1]
        texts = {a.member: a.text or "" for a in answers}
        assert all(text.strip() for text in texts.values()), texts
        by_family: dict[str, set[str]] = {}
        for answer in answers:
            by_family.setdefault(family(answer.spec), set()).add(answer.text or "")
        # two models, two different texts (two members of one family may agree on a fact)
        assert not by_family["gemma3"] & by_family["smollm2"], texts
        assert not result.stage3.is_fallback and result.stage3.text.strip()
    print(f"local council session wall times: {[round(s, 1) for s in wall_s]} s")


def test_the_audit_tests_self_preference_across_the_two_families(audited_sessions):
    """The self-preference family runs on real judges of two families; whether it flags
    is what it measures, so nothing here asserts a finding either way."""
    results, _, _ = audited_sessions
    specs = {m.name: m.spec for m in load_council_config(CONFIG).members}
    pairs: set[tuple[str, str]] = set()
    tested = 0
    self_preference_reviewers: set[str] = set()
    for result in results:
        for review in result.stage2:
            if review.ok:
                pairs |= {
                    (family(specs[review.reviewer]), family(specs[c.candidate]))
                    for c in review.candidates
                    if c.score is not None
                }
        audit = result.metadata["bias_audit"]
        if "self_preference" in audit["risk_tests_run"]:
            tested += 1
            assert audit["overall_bias_risk"] != "not_tested"
            assert "self_preference" in audit["risk_p_values"]
            self_preference_reviewers |= {
                name for name, value in audit["self_preference"].items() if value is not None
            }
    # reviewers of each family scored answers of the other, and their own
    assert {("gemma3", "smollm2"), ("smollm2", "gemma3"), ("gemma3", "gemma3")} <= pairs, pairs
    assert ("smollm2", "smollm2") in pairs, pairs
    assert tested >= 2, [r.metadata["bias_audit"]["risk_tests_run"] for r in results]
    assert {family(specs[name]) for name in self_preference_reviewers} == {"gemma3", "smollm2"}


def test_most_verdicts_arrive_on_the_structured_channel(audited_sessions):
    results, _, _ = audited_sessions
    reviews = [review for result in results for review in result.stage2]
    structured = [r for r in reviews if r.verdict_channel == "structured"]
    assert len(reviews) == len(load_council_config(CONFIG).members) * len(SESSIONS)
    assert len(structured) >= 0.8 * len(reviews), [(r.parse_status, r.error) for r in reviews]
    for review in reviews:
        if not review.ok:  # never guessed: a failed verdict says why
            assert review.parse_error or review.error
        else:
            assert all(c.score is not None for c in review.candidates)


def test_the_records_are_written_and_bias_report_reads_them(audited_sessions):
    results, store, _ = audited_sessions
    lines = [json.loads(line) for line in store.read_text().splitlines()]
    assert lines and all("schema_version" in line for line in lines)
    sessions = {line.get("session_id") for line in lines}
    assert {r.metadata["session_id"] for r in results} <= sessions
    code, out = run_cli("bias-report", "--store", str(store), "--format", "json")
    assert code == 0
    report = json.loads(out)
    assert report["n_sessions"] == len(SESSIONS), sorted(report)


@pytest.fixture(scope="module")
def prd_subset(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The ``N_PAIRS`` PRD pairs with the shortest answers (the judge's context is small)."""
    pairs = [json.loads(line) for line in PRD_PAIRS.read_text().splitlines() if line.strip()]
    # one line per pair and PRD reviewer: keep each pair once, judged live (no replay)
    unique = {p["id"]: p for p in reversed(pairs)}
    pairs = [
        {key: value for key, value in p.items() if key not in ("judge", "judgments")}
        for p in unique.values()
    ]
    pairs.sort(key=lambda p: len(p["response_a"]) + len(p["response_b"]) + len(p["prompt"]))
    path = tmp_path_factory.mktemp("prd") / "pairs.jsonl"
    path.write_text("".join(json.dumps(p) + "\n" for p in pairs[:N_PAIRS]))
    return path


@pytest.fixture(scope="module")
def judge_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One call cache for calibrate and probe: the probe's unperturbed calls are reused."""
    return tmp_path_factory.mktemp("judge_cache") / "calls.jsonl"


def test_calibrate_judges_prd_pairs_live_in_both_orders(
    local_server, prd_subset, judge_cache, tmp_path
):
    output = tmp_path / "calibration.json"
    code, _ = run_cli(
        "calibrate", str(prd_subset), *JUDGE, *JUDGE_SETTINGS,
        "--cache", str(judge_cache), "--concurrency", "1", "--output", str(output),
    )  # fmt: skip
    report = json.loads(output.read_text())
    assert code in (0, 3), code  # 3: the judge is below the human-agreement bar, a finding
    (judge,) = report["reports"]
    assert judge["pairs_total"] == N_PAIRS, judge["unevaluated"]
    # the grammar gives every call a verdict line, so every pair is judged in both orders
    assert judge["pairs_evaluated"] == N_PAIRS, judge["unevaluated"]
    flips = judge["position_bias"]["flips"]
    assert flips["n"] == N_PAIRS and 0 <= flips["ci_low"] <= flips["rate"] <= flips["ci_high"] <= 1


def test_probe_perturbs_answers_and_judges_them_live(
    local_server, prd_subset, judge_cache, tmp_path
):
    output = tmp_path / "probe.json"
    code, _ = run_cli(
        "probe", str(prd_subset), *JUDGE, *JUDGE_SETTINGS, "--probes", "padding",
        "--cache", str(judge_cache), "--concurrency", "1", "--output", str(output),
    )  # fmt: skip
    assert code == 0
    (judge,) = json.loads(output.read_text())["reports"]
    padding = judge["probes"]["padding"]
    robustness = padding["robustness"]
    assert padding["pairs"] == N_PAIRS == robustness["n"]
    assert 0 <= robustness["ci_low"] <= robustness["rate"] <= robustness["ci_high"] <= 1
    assert judge["reused_calls_in_run"] + judge["cached_calls"] >= 2 * N_PAIRS  # the baseline
