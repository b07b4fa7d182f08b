"""A scripted model for whole paper tables: one loopback server that answers every configuration's calls.

Answers depend only on the request (a hash of its messages picks them), so two runs over the same
samples get the same answers in any order, and a resumed run gets the answers an uninterrupted one
would have got. Each kind of call gets an answer in its own format:

- a call that asks for a JSON schema (debate turns, AgentFact's agents, summaries) gets JSON valid
  under it (:mod:`tests.support.schema_stub`);
- the tree search's calls get the formats of :mod:`tests.support.t2agent_script`, with a check's
  answer, its correctness score (4 to 9) and its reliability score (5 to 9) picked by the hash, so
  some subtasks are pruned, some searched again and some posts stopped early as fake;
- FactGuard's verifier looks closer at a clip in its first turn for half of the posts, then answers;
- the cascade's checks, the planner, rewards and critics get the formats of
  :mod:`tests.support.selector_script`, with the check's verdict and a single pass's label picked by
  the hash, so a table's rows differ from one another; a free-text debate turn names one of the
  labels its answer format offers.

Token counts are estimated as the characters of the request's text, and of the answer, over four,
plus 765 prompt tokens for every image attached (GPT-4o's count for a 1024-pixel image at high
detail, as benchmarks/search_cost.py assumes): the scripted runs' accounting counts the prompts our
configurations really build.

Run as a module (``python -m tests.support.reproduce_script``), it serves on a free loopback port
until killed and prints its base URL first (``benchmarks/soak_real.py`` runs it so).
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
VIDEO_CHECK = "You check short-video posts"
SCOUT = '<tool_call>{"name": "clip_scout", "arguments": {"start_s": 0, "end_s": 2}}</tool_call>'
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


IMAGE_TOKENS = 765


def images_in(body: Mapping[str, Any]) -> int:
    return sum(1 for message in body.get("messages", []) if not isinstance(message.get("content", ""), str)
               for part in message["content"] if isinstance(part, dict) and part.get("type") == "image_url")


GRAMMAR_FIELDS = ("grammar", "structured_outputs", "guided_grammar")
"""Where a request carries a turn format's grammar: the answer depends on the messages, as a model's would."""


def scripted_answer(body: Mapping[str, Any]) -> str:
    hashed = {k: v for k, v in body.items() if k not in GRAMMAR_FIELDS}
    digest = hashlib.sha256(json.dumps(hashed, sort_keys=True, default=str).encode()).digest()
    schema = schema_of(dict(body))
    if schema is not None:
        return json.dumps(fill(schema, digest))
    tree = stub_tree_answer(body)
    if tree is not None:
        return _varied_tree_answer(tree, body, digest)
    if VIDEO_CHECK in request_text({"messages": body.get("messages", [])[:1]}):
        first_turn = not any(m.get("role") == "assistant" for m in body.get("messages", []))
        if first_turn and digest[1] % 2 == 0:
            return "<think>The opening seconds need a closer look.</think>" + SCOUT
        return f"<think>The post and what was seen settle it.</think><answer>{'fake' if digest[0] % 2 else 'real'}</answer>"
    answer = stub_answer(body)
    finish = re.search(r"Finish\[([A-Z ]+)\]", answer)
    if finish is not None and finish.group(1) in CHECKS and digest[0] % 3 == 0:
        return answer.replace(finish.group(0), f"Finish[{CHECKS[finish.group(1)]}]")
    if "FINAL ANSWER: visual_veracity_distortion" in answer:
        offered = re.search(r"FINAL ANSWER: <one of: ([^>]+)>", request_text(body))
        labels = [label.strip() for label in offered.group(1).split(",")] if offered else M3D_LABELS
        return answer.replace("visual_veracity_distortion", labels[digest[0] % len(labels)])
    return answer


def _varied_tree_answer(answer: str, body: Mapping[str, Any], digest: bytes) -> str:
    if "correctness score is" in answer:
        return re.sub(r"score is \d+", f"score is {4 + digest[2] % 6}", answer)
    if "reliability score is" in answer:
        return re.sub(r"score is \d+", f"score is {5 + digest[2] % 5}", answer)
    menu = re.search(r"- Finish\[([^\]]+)\] or Finish\[([^\]]+)\]: ends the check", request_text(body))
    if menu is not None and "Finish[" in answer and digest[3] % 4 == 0:
        return answer.replace(f"Finish[{menu.group(2)}]", f"Finish[{menu.group(1)}]")
    return answer


def respond(body: dict[str, Any], _n: int) -> tuple[int, dict[str, Any], float]:
    """One answer, or ``n`` of them when the request asks for several choices (as vLLM and OpenAI do):
    the prompt is billed once, the completions each."""
    count = max(1, int(body.get("n") or 1))
    texts = [scripted_answer(body if i == 0 else {**body, "choice": i}) for i in range(count)]
    prompt_tokens = max(1, len(request_text(body)) // 4) + IMAGE_TOKENS * images_in(body)
    reply = completion_body(texts[0], prompt_tokens=prompt_tokens, completion_tokens=sum(max(1, len(t) // 4) for t in texts))
    reply["choices"] = [{"index": i, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}
                        for i, text in enumerate(texts)]
    return 200, reply, 0.0


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
            "transport_retries: 0, concurrency: 8}\n")


def main() -> None:
    """Serve the scripted model on a free loopback port until killed; the base URL is the first line printed."""
    import sys
    import time

    with scripted_table_server() as server:
        sys.stdout.write(server.base_url + "\n")
        sys.stdout.flush()
        while True:
            time.sleep(3600)


if __name__ == "__main__":
    main()
