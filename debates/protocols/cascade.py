"""The three modality checks of the cascade and how their answers map onto the M3D taxonomy.

Each modality agent answers with one ``Finish[...]`` action. Only the two actions of its own
modality count: a text agent that answers ``Finish[MATCH]`` has not done its job, so that answer is
unreadable (and retried), not silently reinterpreted.
"""

from __future__ import annotations

from dataclasses import dataclass

from m3d_agents.errors import ParseError
from m3d_agents.parsing import parse_finish


@dataclass(frozen=True)
class ModalityCheck:
    role: str
    title: str
    clear: str
    distorted: str
    distortion_label: str


CHECKS: dict[str, ModalityCheck] = {
    "text": ModalityCheck("text", "text veracity", "TEXT SUPPORT", "TEXT REFUTE", "textual_veracity_distortion"),
    "image": ModalityCheck("image", "image veracity", "IMAGE SUPPORT", "IMAGE REFUTE", "visual_veracity_distortion"),
    "cross_modal": ModalityCheck(
        "cross_modal", "cross-modal consistency", "MATCH", "MISMATCH", "cross_modal_consistency_distortion"
    ),
}
NO_DISTORTION_LABEL = "original"


def parse_modality_action(text: str, role: str) -> str:
    """The Finish action of a modality agent, which must be one of its own two actions."""
    check = CHECKS[role]
    action = parse_finish(text)
    if action not in (check.clear, check.distorted):
        raise ParseError(
            f"Finish[{check.distorted}|{check.clear}]",
            f"the {check.title} agent must answer Finish[{check.distorted}] or Finish[{check.clear}], not Finish[{action}]",
            text,
        )
    return action


def distortion_label(role: str, action: str) -> str | None:
    """The M3D label an action establishes, or None when this modality found no distortion."""
    check = CHECKS[role]
    return check.distortion_label if action == check.distorted else None


def cascade_label(actions: dict[str, str | None]) -> str | None:
    """AgentM3D eq. 9 over the actions given so far (role -> action, None when unreadable or absent).

    The first modality, in cascade order, whose action reports a distortion decides the label; a
    modality with an unreadable answer makes the outcome unknown (None), because a distortion it
    would have found cannot be ruled out. All modalities clear: ``original``.
    """
    for role in CHECKS:
        if role not in actions:
            continue
        action = actions[role]
        if action is None:
            return None
        label = distortion_label(role, action)
        if label is not None:
            return label
    return NO_DISTORTION_LABEL
