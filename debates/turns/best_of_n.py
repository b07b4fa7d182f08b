"""Turn policy ``best_of_n``: N concurrent candidates, scored s = u + q, with the top-m early stop.

The candidates are N separate calls with different seeds, sent together (OpenAI-compatible
clients reject ``n``, and separate calls let vLLM batch them). With ``scoring: all`` (AgentM3D's
Alg. 1 as written) every candidate is scored, the scores are sorted and the top-m gap gives m*,
and the best candidate wins. With ``scoring: lazy`` candidates are scored in sampling order and
scoring stops at m*, so later candidates cost no reward and no critique call, but the winner may
not be the best of all N. Each turn records m*, the scores and the calls saved in the per-sample
turn-policy state.
"""

from __future__ import annotations

import asyncio
from typing import Any, Callable, Sequence, TypeVar

from autogen_core.models import LLMMessage

from debates.debate_engine.config import BestOfNSettings
from debates.turns.critics import Critic, ForgeryReport, critic_for
from debates.turns.rewards import RewardScorer, build_reward_scorer
from debates.turns.scoring import CandidateScore, best_index, early_stop_m, gap_exceeds
from debates.debate_engine.turn_state import TurnSelection
from debates.debate_engine.turn_policy import TURN_POLICIES, TurnContext, TurnRequest
from debates.strategy import derive_seed
from m3d_agents.asking import Answer, ask, choice_seed
from m3d_agents.backends.metering import MeteredClient
from debates.debate_engine.diagnostics import CandidateScore as CandidateReport

T = TypeVar("T")

def decision(value: object) -> tuple[object, object]:
    """What a candidate decides (its label or modality action), ignoring how it argues."""
    return getattr(value, "label", None), getattr(value, "action", None)


def candidate_seeds(create_kwargs: dict[str, Any], index: int) -> dict[str, Any]:
    """``create_kwargs`` for candidate ``index`` of a turn: the N candidates are drawn as the N choices of one
    request seeded from the turn's seed by :func:`derive_seed` (:func:`~m3d_agents.asking.choice_seed`), so
    their seeds stay in the range every seed keeps and never meet another call site's."""
    extra = dict(create_kwargs.get("extra_create_args", {}))
    extra["seed"] = derive_seed(int(extra.get("seed", 0)), "candidates")
    return choice_seed({**create_kwargs, "extra_create_args": extra}, index)


class BestOfN:
    def __init__(
        self,
        config: BestOfNSettings,
        reward: RewardScorer | None = None,
        forgery_report: ForgeryReport | None = None,
    ) -> None:
        self.config = config
        self.reward = reward or build_reward_scorer(config.reward)
        self._forgery_report = forgery_report

    async def produce(self, request: TurnRequest[T]) -> Answer[T]:
        client, messages, parse, context = request.client, request.messages, request.parse, request.context
        retries, create_kwargs, on_retry = request.retries, request.create_kwargs, request.on_retry
        answers = await self._sample(client, messages, parse, retries, create_kwargs, on_retry)
        readable = [i for i, answer in enumerate(answers) if answer.ok]
        critic = critic_for(context.seat.role, self.config, self._forgery_report)
        unanimous = self.config.skip_unanimous and len(readable) > 1 and len({decision(answers[i].value) for i in readable}) == 1
        if unanimous:
            scores = []
        else:
            scores = await self._score(client, messages, answers, readable, critic, context, retries)
        totals = [s.total for s in scores]
        best = best_index(totals)
        m_star = self._m_star(scores, readable)
        note = ""
        if unanimous:
            chosen = readable[0]
            note = "every candidate reached the same answer; scoring was skipped"
        elif not readable:
            chosen = None
            note = "no candidate gave a readable answer"
        elif best is None:
            chosen = readable[0]
            note = "" if len(readable) == 1 else "no candidate could be scored; the first readable one was kept"
        else:
            chosen = scores[best].index
        unscored = len(readable) - len(scores)
        context.turn_state.turns.append(
            TurnSelection(
                speaker=context.seat.name,
                round=context.round,
                n=self.config.n,
                readable=len(readable),
                m_star=m_star,
                chosen=chosen,
                scores=[
                    CandidateReport(candidate=s.index, u=s.reward, q=s.critique, s=s.total, errors=s.errors)
                    for s in scores
                ],
                saved_reward_calls=unscored if self.reward.counts_model_calls else 0,
                saved_critique_calls=unscored if critic is not None else 0,
                reward=self.reward.name,
                critic=critic.name if critic is not None else None,
                note=note,
            )
        )
        return answers[chosen if chosen is not None else 0]

    def _m_star(self, scores: list[CandidateScore], readable: list[int]) -> int:
        """m*: where scoring stopped (lazy), or Alg. 1 over all N scores sorted in descending order."""
        if len(readable) < 2 or not scores:
            return len(readable) if len(readable) < 2 else len(scores)
        if self.config.early_stop and self.config.scoring == "all":
            ranked = sorted((s.total for s in scores if s.total is not None), reverse=True)
            return early_stop_m(ranked, self.config.tau) if ranked else len(scores)
        return len(scores)

    async def _sample(
        self,
        client: MeteredClient,
        messages: Sequence[LLMMessage],
        parse: Callable[[str], T],
        retries: int,
        create_kwargs: dict[str, Any],
        on_retry: Callable[[], None] | None,
    ) -> list[Answer[T]]:
        extra = dict(create_kwargs.get("extra_create_args", {}))
        if self.config.temperature is not None:
            extra["temperature"] = self.config.temperature
        candidates = client.with_role("candidate")
        return list(
            await asyncio.gather(
                *(
                    ask(
                        candidates,
                        messages,
                        parse,
                        retries=retries,
                        create_kwargs=candidate_seeds({**create_kwargs, "extra_create_args": extra}, i),
                        on_retry=on_retry,
                    )
                    for i in range(self.config.n)
                )
            )
        )

    async def _score(
        self,
        client: MeteredClient,
        messages: Sequence[LLMMessage],
        answers: Sequence[Answer[Any]],
        readable: list[int],
        critic: Critic | None,
        context: TurnContext,
        retries: int,
    ) -> list[CandidateScore]:
        """Scores in sampling order: all at once without early stop, else two, then one at a time."""

        async def score_one(index: int) -> CandidateScore:
            result = CandidateScore(index=index, critiqued=critic is not None)
            text = answers[index].text
            jobs = [self.reward.score(client, messages, text, context, retries)]
            if critic is not None:
                jobs.append(critic.critique(client, text, context, retries))
            outcomes = await asyncio.gather(*jobs)
            result.reward = outcomes[0].value
            if outcomes[0].error:
                result.errors.append(f"reward: {outcomes[0].error}")
            if critic is not None:
                result.critique = outcomes[1].value
                if outcomes[1].error:
                    result.errors.append(f"critique: {outcomes[1].error}")
            return result

        if len(readable) < 2:
            return []
        if not self.config.early_stop or self.config.scoring == "all":
            return list(await asyncio.gather(*(score_one(i) for i in readable)))
        scores = list(await asyncio.gather(score_one(readable[0]), score_one(readable[1])))
        for index in readable[2:]:
            if gap_exceeds([s.total for s in scores if s.total is not None], self.config.tau):
                break
            scores.append(await score_one(index))
        return scores


TURN_POLICIES.add("best_of_n", lambda config: BestOfN(config), "N candidates scored s = u + q, with the top-m early stop")
