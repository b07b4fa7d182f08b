"""A scripted model for whole paper tables: one loopback server that answers every configuration's calls.

Answers depend only on the request (a hash of its messages picks them), so two runs over the same
samples get the same answers in any order, and a resumed run gets the answers an uninterrupted one
would have got. Each kind of call gets an answer in its own format:

- a call that asks for a JSON schema (debate turns, AgentFact's agents, summaries) gets JSON valid
  under it (:mod:`tests.support.schema_stub`);
- the tree search's calls get the answers of :mod:`tests.support.t2agent_script`;
- the cascade's checks, the planner, rewards and critics get the formats of
  :mod:`tests.support.selector_script`, with the check's verdict and a single pass's label picked by
  the hash, so a table's rows differ from one another.

Token counts are estimated as the characters of the request's text, and of the answer, over four
(images are not counted): the scripted runs' accounting counts the prompts our configurations
really build.
"""

from __future__ import annotations

import hashlib
import json
import re
from typing import Any, Mapping

from tests.support.openai_stub_server import StubOpenAIServer, completion_body
from tests.support.schema_stub import fill, schema_of
from tests.support.selector_script import stub_answer
from tests.support.t2agent_script import stub_tree_answer

M3D_LABELS = ["original", "textual_veracity_distortion", "visual_veracity_distortion", "cross_modal_consistency_distortion"]
CHECKS = {"TEXT SUPPORT": "TEXT REFUTE", "IMAGE SUPPORT": "IMAGE REFUTE", "MATCH": "MISMATCH"}


def request_text(body: Mapping[str, Any]) -> str:
    parts = []
    for message in body.get("messages", []):
        content = message.get("content", "")
        if isinstance(content, str):
            parts.append(content)
        else:
            parts.extend(part.get("text", "") for part in content if isinstance(part, dict))
    return "\n".join(parts)


def scripted_answer(body: Mapping[str, Any]) -> str:
    digest = hashlib.sha256(json.dumps(body.get("messages", []), sort_keys=True).encode()).digest()
    schema = schema_of(dict(body))
    if schema is not None:
        return json.dumps(fill(schema, digest))
    tree = stub_tree_answer(body)
    if tree is not None:
        return tree
    answer = stub_answer(body)
    finish = re.search(r"Finish\[([A-Z ]+)\]", answer)
    if finish is not None and finish.group(1) in CHECKS and digest[0] % 3 == 0:
        return answer.replace(finish.group(0), f"Finish[{CHECKS[finish.group(1)]}]")
    if "FINAL ANSWER: visual_veracity_distortion" in answer:
        return answer.replace("visual_veracity_distortion", M3D_LABELS[digest[0] % len(M3D_LABELS)])
    return answer


def respond(body: dict[str, Any], _n: int) -> tuple[int, dict[str, Any], float]:
    text = scripted_answer(body)
    return 200, completion_body(text, prompt_tokens=max(1, len(request_text(body)) // 4),
                                completion_tokens=max(1, len(text) // 4)), 0.0


def scripted_table_server(delay_s: float = 0.0) -> StubOpenAIServer:
    """Start with ``with scripted_table_server() as server:``; ``delay_s`` holds every answer back that long."""
    if not delay_s:
        return StubOpenAIServer(respond)

    def slow(body: dict[str, Any], n: int) -> tuple[int, dict[str, Any], float]:
        status, reply, _ = respond(body, n)
        return status, reply, delay_s

    return StubOpenAIServer(slow)


def backend_file(base_url: str, name: str = "scripted", model: str = "scripted-model") -> str:
    """A backends file naming the scripted server (vLLM's kind, no response cache: each run asks again)."""
    return (f"backends:\n  {name}: {{kind: vllm, model: {model}, base_url: '{base_url}', cache: false, "
            "max_retries: 0, concurrency: 8}\n")
