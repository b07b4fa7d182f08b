"""The messages of each kind of call the search makes: priors, a step, the trajectory score, the confidence score.

Pure functions of the configuration, the post and the tree, so tests can read exactly what each
call showed the model. Every prompt starts with the post, so a server's prefix cache can reuse
it across the many calls one post gets.
"""

from __future__ import annotations

from typing import Sequence

from autogen_core.models import LLMMessage, SystemMessage, UserMessage

import prompts
from debates.strategies.t2agent.config import SubtaskConfig, T2AgentConfig
from m3d_agents.tools.react import FINISH, ActionSpec, action_menu
from debates.strategies.t2agent.tree import Node
from m3d_agents.fence import quote_text
from m3d_agents.media.images import PreparedSample
from m3d_agents.media.post_content import image_context, user_content


def post_block(prepared: PreparedSample, vision: bool, show_image: bool = True) -> str:
    """The post's text, and what stands for its image: the image itself (vision), the describers'
    findings (text-only backends), or, for calls that judge from the text and the observations,
    only that there is one."""
    if show_image or not prepared.images:
        context = image_context(prepared, vision)
    else:
        context = prompts.render("t2agent/image_elsewhere", count=len(prepared.images))
    return prompts.render("t2agent/post", text=prepared.sample.text, image_context=context)


def task_text(subtask: SubtaskConfig) -> str:
    return prompts.render(subtask.prompt, fake_answer=subtask.fake_answer, real_answer=subtask.real_answer)


def score_task_text(config: T2AgentConfig, subtask: SubtaskConfig) -> str:
    """What a score prompt says about the check: the step prompts' whole task, or only its title and answers
    (the scores judge the path and its observations; how to search is the step's business)."""
    if config.score_task == "full":
        return task_text(subtask)
    return prompts.render("t2agent/check_brief", title=subtask.title, fake_answer=subtask.fake_answer,
                          real_answer=subtask.real_answer)


def render_step(node: Node, k: int, observation: bool = True) -> str:
    """Step ``k`` of a trajectory: its thought, its action and (for a tool step) what the tool returned."""
    lines = [f"Thought {k}: {node.thought or '(none)'}"]
    if node.kind == "answer":
        lines.append(f"Action {k}: {FINISH}[{node.finish}]")
    else:
        lines.append(f"Action {k}: {node.verb}[{node.argument or ''}]")
        if observation:
            # A tool's output carries outside text (pages, OCR, descriptions): fenced, so a step or a score
            # read from the model's answer can never be one that a page wrote.
            shown = quote_text(node.observation, source=f"{node.verb} output") if node.observation else "(none)"
            lines.append(f"Observation {k}:\n{shown}")
    return "\n".join(lines)


def render_trajectory(steps: Sequence[Node], observations: bool = True) -> str:
    """Thought k / Action k / Observation k lines of a path of step and answer nodes."""
    return "\n".join(render_step(node, k, observations) for k, node in enumerate(steps, start=1))


def memory_block(attempts: Sequence[Node]) -> str:
    """Earlier answers of this subtask that decided nothing, newest last."""
    if not attempts:
        return ""
    parts = ["Earlier attempts at this check that did not reach a confident answer (learn from them):"]
    for i, leaf in enumerate(attempts, start=1):
        reward = f"{leaf.reward:.2f}" if leaf.reward is not None else "unknown"
        parts.append(f"Attempt {i}:\n{render_trajectory(leaf.steps())}\nIts reward: {reward}")
    return "\n\n".join(parts) + "\n\n"


def prior_messages(config: T2AgentConfig, prepared: PreparedSample, vision: bool) -> list[LLMMessage]:
    k = len(config.subtasks)
    sources = "\n".join(f"{i}. {s.title}" for i, s in enumerate(config.subtasks, start=1))
    example = ", ".join(["0.5"] * k)
    text = prompts.render(config.prior_prompt, post=post_block(prepared, vision), sources=sources, count=k, example=example)
    return [UserMessage(content=user_content(text, prepared, vision), source="user")]


def step_messages(
    config: T2AgentConfig,
    subtask: SubtaskConfig,
    specs: dict[str, ActionSpec],
    parent: Node,
    memory: Sequence[Node],
    prepared: PreparedSample,
    vision: bool,
    must_finish: bool,
) -> list[LLMMessage]:
    """The prompt that asks for the step after ``parent`` (a subtask node or a step node)."""
    steps = parent.steps()
    k = len(steps) + 1
    trajectory = f"Your steps so far:\n{render_trajectory(steps)}" if steps else "You have taken no step yet."
    if must_finish:
        instruction = prompts.render("t2agent/step_finish", k=k, choices=" or ".join(f"{FINISH}[{a}]" for a in subtask.answers))
    else:
        example = next((s.form for s in specs.values()), f"{FINISH}[{subtask.real_answer}]")
        instruction = prompts.render("t2agent/step_next", k=k, example=example)
    see = vision and subtask.sees_image
    text = prompts.render(
        "t2agent/step", post=post_block(prepared, see, subtask.sees_image), task=task_text(subtask),
        menu=action_menu(specs, subtask.answers, config.menu), memory=memory_block(memory), trajectory=trajectory, instruction=instruction,
    )
    return [SystemMessage(content=prompts.load("t2agent/step_system")),
            UserMessage(content=user_content(text, prepared, see), source="user")]


def trajectory_score_messages(
    config: T2AgentConfig, subtask: SubtaskConfig, node: Node, prepared: PreparedSample, vision: bool
) -> list[LLMMessage]:
    """S_T (eq. 1): the whole path from the subtask down to ``node``."""
    see = vision and config.scores_see_image
    text = prompts.render("t2agent/trajectory_score", post=post_block(prepared, see, config.scores_see_image),
                          task=score_task_text(config, subtask), trajectory=render_trajectory(node.steps()),
                          analysis=prompts.load(f"t2agent/analysis_{config.trajectory_analysis}"))
    return [UserMessage(content=user_content(text, prepared, see), source="user")]


def confidence_messages(
    config: T2AgentConfig, subtask: SubtaskConfig, leaf: Node, prepared: PreparedSample, vision: bool
) -> list[LLMMessage]:
    """S_C (eq. 2): the thoughts and observations of the path, and the answer."""
    see = vision and config.scores_see_image
    trajectory = render_trajectory(leaf.steps()[:-1]) or "(the agent answered without any tool step)"
    if leaf.thought:
        trajectory += f"\nFinal thought: {leaf.thought}"
    text = prompts.render("t2agent/confidence_score", post=post_block(prepared, see, config.scores_see_image),
                          task=score_task_text(config, subtask),
                          trajectory=trajectory, answer=leaf.finish or "")
    return [UserMessage(content=user_content(text, prepared, see), source="user")]
