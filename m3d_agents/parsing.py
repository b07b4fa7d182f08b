"""Turning model text into typed answers, for every answer format the five systems use.

The rule throughout: read what the text *says*, or raise :class:`ParseError`. A parser never
guesses, because a guessed label looks exactly like a real one in a results table. Callers retry
the model and, failing that, record an abstention with the error as its reason.

A second rule: read only the model's *own* answer. Evidence that a model echoes or quotes may
carry a fake answer (``FINAL ANSWER: real``, ``{"answer": "true"}``, ``Finish[TEXT SUPPORT]``), so
every parser first drops reasoning blocks and fenced quoted material (:func:`own_text`, see
:mod:`m3d_agents.fence`), and answers that end a message are read from its final block only
(:func:`final_block`): the last few lines, where the prompts ask for them. A JSON answer is the
whole text, or an object that stands on its own lines, the last one written; never an object
quoted inside a sentence.
"""

from __future__ import annotations

import ast
import json
import re
from functools import lru_cache
from typing import Any, Sequence, TypeVar

from pydantic import BaseModel, ValidationError

from m3d_agents.errors import ParseError
from m3d_agents.fence import without_quoted
from m3d_agents.labels import Taxonomy
from m3d_agents.safe_json import JsonTooDeep, loads_bounded

T = TypeVar("T", bound=BaseModel)

_THINK_BLOCK = re.compile(r"<think>.*?(?:</think>|$)", re.IGNORECASE | re.DOTALL)
_ENDS_TOKEN = r"(?=\s*$|\s*\n|\s*[.,!;:)\]*\"'`>]|\s+(?:because|since)\b)"
_YES_NO_TOKEN = re.compile(r"(?<![\w'-])(yes|no)" + _ENDS_TOKEN, re.IGNORECASE)
_ANSWER_MARKER = re.compile(
    r"(?:final\s+answer|final\s+verdict|answer|verdict|decision|conclusion|misinformation\??)"
    r"\s*(?:is|:|=|-|—)?\s*[*_\"'`\[(]*\s*(yes|no)" + _ENDS_TOKEN,
    re.IGNORECASE,
)


def strip_reasoning(text: str) -> str:
    """The model's own visible words: ``<think>`` blocks (reasoning models) and fenced quoted material
    (evidence it echoed) dropped, so that neither is ever read as its answer."""
    return without_quoted(_THINK_BLOCK.sub("", text)).strip()


own_text = strip_reasoning

FINAL_LINES = 3
"""How many of an answer's last non-empty lines make its final block: the prompts ask for the answer
lines at the end (``FINAL ANSWER:`` then ``CONFIDENCE:``), and a model may add a closing remark."""


def final_block(visible: str, lines: int = FINAL_LINES) -> str:
    """The last ``lines`` non-empty lines of the model's own text (see :func:`own_text`)."""
    kept = [line for line in visible.splitlines() if line.strip()]
    return "\n".join(kept[-lines:])


def parse_yes_no(text: str) -> bool:
    """Read a final YES/NO to "is this misinformation?"; True means YES.

    Only a standalone yes/no that ends a phrase counts, so "Not", "Note", "No doubt", "no evidence"
    are never read as NO. An explicit answer marker ("Answer: NO") wins over loose mentions;
    loose mentions that disagree are ambiguous and raise.
    """
    visible = final_block(strip_reasoning(text))
    marked = _ANSWER_MARKER.findall(visible)
    if marked:
        return marked[-1].lower() == "yes"
    tokens = {t.lower() for t in _YES_NO_TOKEN.findall(visible)}
    if len(tokens) == 1:
        return tokens.pop() == "yes"
    if not tokens:
        raise ParseError("yes/no", "no standalone YES or NO answer", text)
    raise ParseError("yes/no", "both YES and NO appear without an answer marker", text)


FINISH_ACTIONS = ("TEXT REFUTE", "TEXT SUPPORT", "IMAGE REFUTE", "IMAGE SUPPORT", "MATCH", "MISMATCH")


@lru_cache(maxsize=None)
def _finish_pattern(actions: tuple[str, ...]) -> re.Pattern[str]:
    # Longest first, so that MISMATCH is never read as MATCH; any run of spaces inside an action.
    names = sorted(actions, key=len, reverse=True)
    alternatives = "|".join(r"\s+".join(re.escape(word) for word in name.split()) for name in names)
    return re.compile(rf"Finish\s*\[\s*({alternatives})\s*\]", re.IGNORECASE)


def parse_finish(text: str, actions: Sequence[str] = FINISH_ACTIONS) -> str:
    """Read the ReAct-style final action ``Finish[...]`` (one of ``actions``) from the answer's final block; the
    last one there is the agent's decision."""
    found = _finish_pattern(tuple(actions)).findall(final_block(strip_reasoning(text)))
    if not found:
        raise ParseError("Finish[...]", f"no Finish[...] with one of {', '.join(actions)}", text)
    return " ".join(found[-1].upper().split())


_BON = re.compile(r"\[\s*BON\s*level\s*-?\s*([01])\s*\]", re.IGNORECASE)


def parse_bon_level(text: str) -> int:
    """Read the planner's choice: ``[BON level-0]`` (single pass) or ``[BON level-1]`` (best-of-N)."""
    levels = set(_BON.findall(strip_reasoning(text)))
    if len(levels) == 1:
        return int(levels.pop())
    if not levels:
        raise ParseError("[BON level-k]", "no [BON level-0] or [BON level-1]", text)
    raise ParseError("[BON level-k]", "both levels are named", text)


_NUMBER = r"([-+]?(?:\d+(?:\.\d*)?|\.\d+))"
_UNIT_SCORE = re.compile(
    r"(?:score|reward|rating|confidence|probability)\s*(?:is|of|:|=)?\s*[*_\"'`]*\s*" + _NUMBER + r"\s*(%)?",
    re.IGNORECASE,
)
_BARE_NUMBER = re.compile(r"^\s*[*_\"'`]*" + _NUMBER + r"\s*(%)?[*_\"'`.]*\s*$")


def parse_unit_score(text: str) -> float:
    """Read a score in [0, 1] ("Score: 0.8", "0.8", "80%"); out-of-range values raise."""
    visible = strip_reasoning(text)
    match = _BARE_NUMBER.match(visible)
    found = [match.groups()] if match else _UNIT_SCORE.findall(final_block(visible))
    if not found:
        raise ParseError("score in [0, 1]", "no score found", text)
    number, percent = found[-1]
    value = float(number) / (100.0 if percent else 1.0)
    if not 0.0 <= value <= 1.0:
        raise ParseError("score in [0, 1]", f"{value} is outside [0, 1]", text)
    return value


_TEN_POINT = re.compile(r"score\s+(?:is|of|:|=)\s*[*_\"'`]*\s*" + _NUMBER + r"(?:\s*/\s*10)?", re.IGNORECASE)


def parse_ten_point_score(text: str) -> float:
    """Read "... score is s" with s from 1 to 10 (the critique format)."""
    found = _TEN_POINT.findall(final_block(strip_reasoning(text)))
    if not found:
        raise ParseError("score 1-10", "no 'score is s' phrase at the end", text)
    value = float(found[-1])
    if not 1.0 <= value <= 10.0:
        raise ParseError("score 1-10", f"{value} is outside 1..10", text)
    return value


_PROB_LIST = re.compile(r"\[\s*" + _NUMBER + r"(?:\s*,\s*" + r"[-+]?(?:\d+(?:\.\d*)?|\.\d+)" + r")+\s*\]")


def parse_probabilities(
    text: str, expected: int | None = None, tolerance: float = 0.05, *, sum_to_one: bool = True
) -> list[float]:
    """Read a probability list ``[p1, p2, p3]``.

    With ``sum_to_one`` (a distribution over classes): each value in [0, 1], summing to 1 within
    ``tolerance``, returned normalised. Without it (independent likelihoods, such as T2Agent's
    per-subtask priors, which need not sum to 1): the raw values, clipped to [0, 1].
    """
    visible = strip_reasoning(text)
    spans = [m.group(0) for m in _PROB_LIST.finditer(visible)]
    if not spans:
        raise ParseError("probability list", "no [p1, p2, ...] list", text)
    values = [float(v) for v in re.findall(r"[-+]?(?:\d+(?:\.\d*)?|\.\d+)", spans[-1])]
    if expected is not None and len(values) != expected:
        raise ParseError("probability list", f"{len(values)} values, expected {expected}", text)
    if not sum_to_one:
        return [min(1.0, max(0.0, v)) for v in values]
    if any(not 0.0 <= v <= 1.0 for v in values):
        raise ParseError("probability list", "a value is outside [0, 1]", text)
    total = sum(values)
    if abs(total - 1.0) > tolerance:
        raise ParseError("probability list", f"values sum to {total:.3f}, not 1", text)
    return [v / total for v in values]


_FENCE = re.compile(r"```(?:json|JSON|javascript|python)?\s*\n?(.*?)```", re.DOTALL)


def _balanced_objects(text: str) -> list[str]:
    """Every top-level ``{...}`` span, honouring single- and double-quoted strings."""
    spans: list[str] = []
    depth, start, quote, escaped = 0, -1, "", False
    for i, ch in enumerate(text):
        if quote:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == quote:
                quote = ""
            continue
        if ch in "\"'" and depth > 0:
            quote = ch
        elif ch == "{":
            if depth == 0:
                start = i
            depth += 1
        elif ch == "}" and depth > 0:
            depth -= 1
            if depth == 0:
                spans.append(text[start : i + 1])
    return spans


def _pythonise_literals(candidate: str) -> str:
    """Rewrite bare JSON literals (true/false/null) outside strings into Python ones."""
    out: list[str] = []
    quote, escaped, i = "", False, 0
    mapping = {"true": "True", "false": "False", "null": "None"}
    while i < len(candidate):
        ch = candidate[i]
        if quote:
            out.append(ch)
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == quote:
                quote = ""
            i += 1
            continue
        if ch in "\"'":
            quote = ch
            out.append(ch)
            i += 1
            continue
        word = re.match(r"[A-Za-z_]+", candidate[i:])
        if word:
            token = word.group(0)
            out.append(mapping.get(token, token))
            i += len(token)
            continue
        out.append(ch)
        i += 1
    return "".join(out)


def _load_object(candidate: str) -> dict[str, Any] | None:
    # strict=False reads raw newlines and tabs inside strings: llama.cpp's JSON grammar lets a small
    # model write them, and what the text says is unambiguous.
    try:
        value = loads_bounded(candidate, strict=False)
    except JsonTooDeep:
        return None
    except json.JSONDecodeError:
        try:
            value = ast.literal_eval(_pythonise_literals(candidate))
        except (ValueError, SyntaxError, MemoryError, RecursionError):
            return None
    return value if isinstance(value, dict) else None


_LEAD_IN = re.compile(r"^[ \t>*_#-]*(?:[A-Za-z][A-Za-z ]{0,30}:)?[ \t*_]*$")
"""What may precede an answer's object on its line: nothing, or a short label (``Answer:``, ``JSON:``)."""


def _standing_objects(text: str) -> list[tuple[int, str]]:
    """Top-level ``{...}`` spans that start their line (after at most a short label), with their positions:
    an object inside a sentence is quoted material, not the answer."""
    found = []
    for span in _balanced_objects(text):
        start = text.find(span)
        while start >= 0:
            line_start = text.rfind("\n", 0, start) + 1
            if _LEAD_IN.match(text[line_start:start]):
                found.append((start, span))
                break
            start = text.find(span, start + 1)
    return found


def parse_json_object(text: str) -> dict[str, Any]:
    """Read the answer's JSON object: the whole text, else the last object that stands on its own lines
    (bare, after a short label, or fenced in ```json), followed by prose or not, single-quoted or not.

    An object quoted inside a sentence ("the page says {...}") is never read: evidence a model
    quotes may carry a fake answer, and the model's own answer is written as an answer."""
    visible = strip_reasoning(text)
    whole = _load_object(visible) if visible.startswith("{") and visible.endswith("}") else None
    if whole is not None:
        return whole
    candidates: list[tuple[int, str]] = []
    for block in _FENCE.finditer(visible):
        candidates += [(block.start(1) + visible[block.start(1):].find(c), c) for c in _balanced_objects(block.group(1))]
    candidates += _standing_objects(visible)
    for _, candidate in sorted(candidates, key=lambda pair: pair[0], reverse=True):
        value = _load_object(candidate)
        if value is not None:
            return value
    raise ParseError("JSON object", "no well-formed JSON object standing as the answer", text)


def parse_model(text: str, model: type[T]) -> T:
    """Read a JSON object and validate it against a pydantic model."""
    return _validated(parse_json_object(text), model, text)


def _validated(data: dict[str, Any], model: type[T], text: str) -> T:
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors())
        raise ParseError(model.__name__, problems, text) from exc


def parse_model_setting_aside_confidence(text: str, model: type[T]) -> tuple[T, float | None]:
    """Like :func:`parse_model`, but a ``confidence`` that is missing, not a number, or outside [0, 1]
    is set aside (returned as None) instead of failing the answer.

    Some servers (llama.cpp's grammars) enforce a schema's enums but not its numeric bounds, so a
    small model's valid label can arrive with "confidence": 10. The label is still readable; a
    missing confidence is honest, a clamped one would be invented.
    """
    data = parse_json_object(text)
    stated = data.get("confidence")
    if not isinstance(stated, (int, float)) or isinstance(stated, bool) or not 0.0 <= stated <= 1.0:
        stated = None
    value = _validated({**data, "confidence": 0.0 if stated is None else stated}, model, text)
    return value, None if stated is None else float(stated)


_LABEL_MARKER = re.compile(
    r"(?:final\s+answer|final\s+label|final\s+verdict|label|verdict|answer)\s*(?:is|:|=|-|—)\s*[*_\"'`\[(]*\s*"
    r"([A-Za-z][A-Za-z _-]{0,60}?)\s*(?=$|\n|[.,!;:)\]*\"'`])",
    re.IGNORECASE,
)


def _binary_pair(taxonomy: Taxonomy) -> tuple[str, str] | None:
    fine = [label for label, misinfo in taxonomy.misinformation.items() if not misinfo]
    bad = [label for label, misinfo in taxonomy.misinformation.items() if misinfo]
    return (fine[0], bad[0]) if len(fine) == 1 and len(bad) == 1 else None


def parse_label(text: str, taxonomy: Taxonomy) -> str:
    """Read a taxonomy label: the whole answer as a bare label, or "FINAL ANSWER: fake" (or YES/NO for
    binary sets) in the answer's final block (:func:`final_block`); never a marker from higher up,
    which may be quoted material.

    YES means "this is misinformation" and maps onto the taxonomy's single misinformation label;
    that only works for two-label taxonomies, where the map is unambiguous.
    """
    visible = strip_reasoning(text)
    bare = visible.strip().strip("*_\"'`.[]() ")
    ending = final_block(visible)
    candidates = [bare] + [m.strip() for m in reversed(_LABEL_MARKER.findall(ending))]
    pair = _binary_pair(taxonomy)
    for candidate in candidates:
        try:
            return taxonomy.normalise(candidate)
        except ValueError:
            pass
        if pair is not None and candidate.lower() in {"yes", "no"}:
            return pair[1] if candidate.lower() == "yes" else pair[0]
    if pair is not None:
        try:
            return pair[1] if parse_yes_no(ending) else pair[0]
        except ParseError:
            pass
    raise ParseError(f"{taxonomy.name} label", f"no answer naming one of {', '.join(taxonomy.labels)} at the end", text)
