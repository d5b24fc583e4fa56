"""A loopback OpenAI-compatible server that plays every council role, for whole sessions.

It answers like a sensible model after ``delay_s``: an answer in stage 1, a verdict in
stage 2 and a synthesis in stage 3. The verdict comes back the way the request asked for
it, like a real server: the bare JSON object for a ``json_schema`` ``response_format``
(the labels read from the schema's enum), JSON between the prompt's nonce tags when the
prompt asks for them, else plain JSON. With ``refuse_json_schema`` it answers a
``json_schema`` request with the 400 that servers without structured output send.
Used by the concurrency benchmark and the council-level structured-output tests.
"""

from __future__ import annotations

import json
import re
import threading
from collections import Counter
from typing import Any

from fakes.loopback_http import LoopbackJsonServer, ReceivedRequest, Reply, openai_completion_body

_NONCE_TAG = re.compile(r"<<<VERDICT id=([0-9a-f]+)>>>")
_CANDIDATE_LABEL = re.compile(r"<<<CANDIDATE (Response [A-Z]+) id=")
REFUSAL_MESSAGE = "response_format type 'json_schema' is not supported by this server"


def verdict_for(labels: list[str]) -> dict[str, Any]:
    """A verdict ranking ``labels`` in the order given, scores descending from 9."""
    scores = {label: max(1, 9 - index) for index, label in enumerate(labels)}
    return {"ranking": labels, "scores": scores, "rationale": "in the order shown"}


class CouncilServer(LoopbackJsonServer):
    """Answers every chat-completions request as a council member would."""

    def __init__(self, delay_s: float = 0.0, refuse_json_schema: bool = False) -> None:
        super().__init__()
        self.delay_s = delay_s
        self.refuse_json_schema = refuse_json_schema
        self.kinds: Counter[str] = Counter()  # requests per kind, for the tests
        self._lock = threading.Lock()

    @property
    def base_url(self) -> str:
        return f"{self.url}/v1"

    def _count(self, kind: str) -> None:
        with self._lock:
            self.kinds[kind] += 1

    def choose_reply(self, request: ReceivedRequest) -> Reply:
        body = request.body if isinstance(request.body, dict) else {}
        model = str(body.get("model", "fake"))
        messages = body.get("messages") or []
        prompt = "\n".join(str(m.get("content", "")) for m in messages if m.get("role") == "user")
        response_format = body.get("response_format") or {}
        if response_format.get("type") == "json_schema":
            if self.refuse_json_schema:
                self._count("refused")
                error = {"message": REFUSAL_MESSAGE, "type": "invalid_request_error"}
                return Reply(400, {"error": error}, delay_s=self.delay_s)
            schema = response_format["json_schema"]["schema"]
            labels = list(schema["properties"]["ranking"]["items"]["enum"])
            self._count("structured_review")
            text = json.dumps(verdict_for(labels))
        elif tags := _NONCE_TAG.findall(prompt):
            nonce = tags[-1]  # the instruction follows the candidates (which may fake a tag)
            verdict = json.dumps(verdict_for(_CANDIDATE_LABEL.findall(prompt)))
            self._count("nonce_review")
            text = f"<<<VERDICT id={nonce}>>>\n{verdict}\n<<<END VERDICT id={nonce}>>>"
        elif "<<<CANDIDATE " in prompt and "As chairman" not in prompt:
            self._count("untagged_review")
            text = json.dumps(verdict_for(_CANDIDATE_LABEL.findall(prompt)))
        elif "As chairman" in prompt:
            self._count("synthesis")
            text = f"Synthesis by {model}."
        else:
            self._count("answer")
            text = f"Answer by {model}: keep p99 low with a cache."
        return Reply(200, openai_completion_body(text, model), delay_s=self.delay_s)
