"""From a finished debate to a Verdict: the deciding rule, the confidence and the diagnostics."""

from __future__ import annotations

from collections import Counter

from debates.protocols.cascade import CHECKS, NO_DISTORTION_LABEL, cascade_label, distortion_label
from debates.chat.state import DESK_NAME, DebateState, TurnRecord
from m3d_agents.verdict import Finding, TranscriptTurn


def decide_cascade(state: DebateState) -> tuple[str | None, str, str]:
    """The M3D label of a finished cascade (eq. 9): the first distortion found, else ``original``."""
    actions: dict[str, str | None] = {}
    for seat in state.config.seats:
        turn = state.latest(seat.name)
        if turn is None:
            continue
        actions[seat.role] = turn.reading.action
        if turn.reading.action is None:
            return None, f"the {CHECKS[seat.role].title} answer could not be read: {turn.reading.error}", turn.text
        if distortion_label(seat.role, turn.reading.action) is not None:
            break
    if not actions:
        return None, "no modality agent answered", ""
    label = cascade_label(actions)
    spoken = [t for t in state.turns if t.role in CHECKS]
    rationale = spoken[-1].text if label != NO_DISTORTION_LABEL else "\n\n".join(t.text for t in spoken)
    return label, "cascade", rationale


def decide(state: DebateState) -> tuple[str | None, str, str]:
    """Returns (label or None, how it was decided, rationale text)."""
    config = state.config
    if config.protocol == "cascade":
        return decide_cascade(state)
    judge = next((s.name for s in config.seats if s.role == "judge"), None)
    judge_turn = state.latest(judge) if judge else None
    if judge_turn is not None:
        if judge_turn.reading.label is None:
            return None, f"the judge's answer could not be read: {judge_turn.reading.error}", judge_turn.text
        return judge_turn.reading.label, "judge", judge_turn.text
    if config.protocol in ("actor_skeptic", "standard"):
        actor = config.deciders[0]
        turn = state.latest(actor)
        who = "actor" if config.protocol == "actor_skeptic" else "single"
        if turn is None or turn.reading.label is None:
            reason = turn.reading.error if turn else f"the {who} seat never answered"
            return None, f"the {who} seat's final answer could not be read: {reason}", turn.text if turn else ""
        return turn.reading.label, who, turn.text
    consensus = state.consensus()
    if consensus is not None:
        return consensus, "consensus", _rationale_for(state, consensus)
    majority = state.majority()
    if majority is None:
        return None, f"no consensus and no majority: {state.latest_labels()}", ""
    return majority, "majority", _rationale_for(state, majority)


def _rationale_for(state: DebateState, label: str) -> str:
    for turn in reversed(state.turns):
        if turn.reading.label == label and turn.speaker in state.config.deciders:
            return turn.text
    return ""


def confidence(state: DebateState, label: str, decided_by: str) -> float:
    """Agreement among the deciders, scaled by the confidence they stated (when they stated one).

    For a judge or an actor, their own stated confidence (or 1.0 when they gave none) is used:
    their answer alone decides.
    """
    if decided_by in ("judge", "actor", "single"):
        turn = state.latest(next(s.name for s in state.config.seats if s.role == decided_by))
        return turn.reading.confidence if turn and turn.reading.confidence is not None else 1.0
    if decided_by == "cascade":
        spoken = [t for t in state.turns if t.role in CHECKS]
        deciding = spoken if label == NO_DISTORTION_LABEL else spoken[-1:]
        stated = [t.reading.confidence for t in deciding if t.reading.confidence is not None]
        return min(stated) if stated else 1.0
    latest = [state.latest(name) for name in state.config.deciders]
    agreeing = [t for t in latest if t is not None and t.reading.label == label]
    share = len(agreeing) / max(1, len(latest))
    stated = [t.reading.confidence for t in agreeing if t.reading.confidence is not None]
    return round(share * (sum(stated) / len(stated) if stated else 1.0), 4)


def diagnostics(state: DebateState, label: str | None) -> dict[str, object]:
    deciders = state.config.deciders
    first = [t.reading.label for t in state.turns if t.speaker in deciders and t.round == 1]
    counts = Counter(x for x in first if x is not None)
    ranked = counts.most_common()
    first_majority = ranked[0][0] if ranked and (len(ranked) == 1 or ranked[0][1] > ranked[1][1]) else None
    changes: dict[str, int] = {}
    for name in deciders:
        labels = [t.reading.label for t in state.turns if t.speaker == name and t.reading.label is not None]
        changes[name] = sum(1 for a, b in zip(labels, labels[1:]) if a != b)
    consensus_round = None
    for r in range(1, state.completed_rounds() + 1):
        at_r = [next((t.reading.label for t in state.turns if t.speaker == n and t.round == r), None) for n in deciders]
        if at_r and None not in at_r and len(set(at_r)) == 1:
            consensus_round = r
            break
    return {
        "stop_reason": state.stop_reason,
        "rounds": state.completed_rounds(),
        "consensus_round": consensus_round,
        "answer_changes": changes,
        "first_round_majority": first_majority,
        "overturned_first_round_majority": bool(first_majority and label and label != first_majority),
        "queries_answered": state.answered_queries,
    }


def transcript(state: DebateState) -> list[TranscriptTurn]:
    return [_turn(t) for t in state.turns]


def _turn(t: TurnRecord) -> TranscriptTurn:
    return TranscriptTurn(
        speaker=t.speaker,
        role=t.role,
        round=t.round,
        text=t.text,
        stance=t.stance if t.speaker != DESK_NAME else None,
        parse_error=t.reading.error,
    )


def findings(state: DebateState) -> list[Finding]:
    if state.config.protocol == "cascade":
        return [
            Finding(
                modality=t.role,  # type: ignore[arg-type]
                label=t.reading.action,
                distortion=None if t.reading.action is None else distortion_label(t.role, t.reading.action) is not None,
                summary=t.text[:400],
            )
            for t in state.turns
            if t.role in CHECKS
        ]
    return [
        Finding(modality="overall", label=t.reading.label, summary=t.text[:400])
        for t in (state.latest(name) for name in state.config.deciders)
        if t is not None
    ]
