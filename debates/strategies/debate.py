"""Run one debate configuration on one sample, with a fresh team, and return the Verdict.

Flow: validate the sample, gather evidence, build a fresh team (so no history leaks between
samples), run the turns while streaming each message to an optional callback, then decide.
"""

from __future__ import annotations

import asyncio
import inspect
import time
from typing import Any, Awaitable, Callable, Mapping

from autogen_agentchat.base import ChatAgent, TaskResult
from autogen_agentchat.messages import BaseAgentEvent, BaseChatMessage, TextMessage
from autogen_core import CancellationToken

from debates.config import DebateConfig, SeatConfig
from debates.chat.desk import RetrievalDesk
from debates.chat.human import HumanSeat, InputFunc
from debates.protocols.outcome import confidence, decide, diagnostics, findings, transcript
from debates.chat.seats import ModelSeat
from debates.protocols.speakers import POLICIES
from debates.chat.state import DebateState
from debates.chat.team import DebateGroupChat
from debates.turns.base import build_turn_policy
from m3d_agents.backends.factory import BackendPool
from m3d_agents.backends.metering import UsageLedger
from m3d_agents.errors import BackendError, InputError
from m3d_agents.evidence import Evidence
from m3d_agents.media.images import PreparedSample, prepare_sample
from m3d_agents.labels import collapse_label, get_taxonomy
from m3d_agents.sample import InputLimits, Sample
from m3d_agents.tools.describers import enable_image_describers
from m3d_agents.verdict import Verdict
from retrieval.interfaces import EvidenceSource, QueryAnswerer

MessageCallback = Callable[[BaseAgentEvent | BaseChatMessage, DebateState], Awaitable[None] | None]


def _seat_backend_name(seat: SeatConfig, config: DebateConfig, pool: BackendPool, override: str | None) -> str:
    return override or seat.backend or config.backend or pool.default_backend


def build_seats(
    config: DebateConfig,
    state: DebateState,
    prepared: PreparedSample,
    evidence: list[Evidence],
    pool: BackendPool,
    ledger: UsageLedger,
    *,
    backend: str | None = None,
    human_seats: Mapping[str, InputFunc] | None = None,
    seed: int = 0,
) -> list[ChatAgent]:
    """One participant per seat: a model seat, or a person where ``human_seats`` names the seat.

    Text-only seats see the image through the forensic and OCR tools' findings.
    """
    enable_image_describers()
    humans = dict(human_seats or {})
    for name in humans:
        config.seat(name)
    seats: list[ChatAgent] = []
    for index, seat in enumerate(config.seats):
        if seat.name in humans:
            seats.append(HumanSeat(seat, config, state.taxonomy, prepared, evidence, humans[seat.name]))
            continue
        chosen = pool.get(_seat_backend_name(seat, config, pool, backend), model=seat.model)
        create: dict[str, object] = {
            "temperature": seat.temperature if seat.temperature is not None else config.temperature,
            "seed": seed * 1000 + index,
        }
        seats.append(
            ModelSeat(
                seat,
                config,
                state.taxonomy,
                chosen.view(ledger, agent=seat.name, role=seat.role),
                prepared,
                evidence,
                build_turn_policy(seat.turn_policy),
                create,
                chosen.vision,
                selector=state.selector,
                structured=chosen.structured_args if config.structured_turns else None,
            )
        )
    return seats


async def stop_turns(running: "asyncio.Future[None]", token: CancellationToken) -> None:
    """Stop a debate now, not after the turn in progress: AutoGen's team waits for its runtime to go
    idle before it lets a cancellation through, and the speaking seat's model call can take minutes.
    Cancelling the team's token first reaches that seat (see ``ModelSeat.on_messages``)."""
    token.cancel()
    running.cancel()
    await asyncio.gather(running, return_exceptions=True)


def root_cause(exc: BaseException) -> str:
    """The last line of an error that AutoGen re-raised with the agent's whole traceback in its text."""
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    last = lines[-1] if lines else type(exc).__name__
    return last.split(": ", 1)[1] if last.split(": ", 1)[0].endswith(("Error", "Exception")) else last


async def run_debate(
    config: DebateConfig,
    sample: Sample,
    pool: BackendPool,
    *,
    backend: str | None = None,
    evidence: list[Evidence] | None = None,
    evidence_source: EvidenceSource | None = None,
    query_answerer: QueryAnswerer | None = None,
    human_seats: Mapping[str, InputFunc] | None = None,
    on_message: MessageCallback | None = None,
    limits: InputLimits | None = None,
    seed: int = 0,
) -> Verdict:
    started = time.perf_counter()
    prepared = prepare_sample(sample, limits)
    taxonomy = get_taxonomy(sample.taxonomy)
    answering = get_taxonomy(config.answer_taxonomy(sample.taxonomy))
    try:
        collapse_label(answering.labels[0], answering, taxonomy)
    except ValueError as exc:
        raise InputError("taxonomy", f"the {config.name} configuration answers in {answering.name}: {exc}") from None
    ledger = UsageLedger()
    gathered = list(evidence or [])
    if config.use_evidence and evidence_source is not None:
        gathered += await evidence_source.gather(sample, ledger=ledger)
    kept = [e for e in gathered if e.kept] if config.use_evidence else []
    state = DebateState(config=config, taxonomy=answering)
    participants = build_seats(
        config, state, prepared, kept, pool, ledger, backend=backend, human_seats=human_seats, seed=seed
    )
    desk = None
    if config.protocol == "disambiguation":
        desk = RetrievalDesk(state, query_answerer, sample, ledger)
        participants.append(desk)
    team = DebateGroupChat(participants, state, POLICIES[config.protocol])
    task = TextMessage(content=f"Debate on post {sample.id} begins.", source="moderator")
    token = CancellationToken()

    async def turns() -> None:
        async for item in team.run_stream(task=task, output_task_messages=False, cancellation_token=token):
            if on_message is not None and not isinstance(item, TaskResult):
                result = on_message(item, state)
                if inspect.isawaitable(result):
                    await result

    running = asyncio.ensure_future(turns())
    try:
        await asyncio.shield(running)
    except asyncio.CancelledError:
        await stop_turns(running, token)
        raise
    except BackendError:
        raise
    except Exception as exc:
        raise BackendError(f"the {config.name} debate on sample {sample.id} failed: {root_cause(exc)}") from exc
    answer, decided_by, rationale = decide(state)
    label = collapse_label(answer, answering, taxonomy) if answer is not None else None
    cited = [e.id for e in kept] + ([e.id for e in desk.evidence] if desk else [])
    common: dict[str, Any] = {
        "sample_id": sample.id,
        "taxonomy": taxonomy.name,
        "config": config.name,
        "backend": ",".join(sorted({_seat_backend_name(s, config, pool, backend) for s in config.seats})),
        "transcript": transcript(state),
        "findings": findings(state),
        "evidence_ids": cited,
        "accounting": ledger.accounting(),
        "diagnostics": {
            **diagnostics(state, answer),
            "decided_by": decided_by if label else None,
            "answer": {"taxonomy": answering.name, "label": answer},
            "selection": state.selector.diagnostics(),
            "wall_time_s": round(time.perf_counter() - started, 3),
        },
    }
    if label is None:
        return Verdict.abstain(reason=decided_by, rationale=rationale, **common)
    return Verdict(label=label, confidence=confidence(state, answer or label, decided_by), rationale=rationale, **common)
