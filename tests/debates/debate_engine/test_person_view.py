"""What a person in a seat reads and is asked: the other seats by name, the image's path, how to answer,
the label as a choice and the confidence as a number; and what their answer becomes."""

from __future__ import annotations

from pathlib import Path

from debates.debate_engine.human_input import PersonAnswer, PersonTurn, TerminalSeat, how_to_answer
from debates.config_loader import load_config
from debates.session import run_sample
from m3d_agents.evidence import Evidence
from tests.support.debate import SAMPLE, answer, seat_pool
from tests.support.paths import EXAMPLE_IMAGE


class Terminal:
    """A terminal that types ``lines`` and keeps what was written to it."""

    def __init__(self, lines: list[str]) -> None:
        self.lines = list(lines)
        self.shown: list[str] = []
        self.opened: list[Path] = []

    def read(self) -> str:
        if not self.lines:
            raise EOFError
        return self.lines.pop(0)

    def open(self, path: Path) -> str:
        self.opened.append(path)
        return f"opened {path}"

    def seat(self) -> TerminalSeat:
        return TerminalSeat(read=self.read, write=self.shown.append, opener=self.open)

    @property
    def text(self) -> str:
        return "\n".join(self.shown)


async def test_a_person_in_a_debater_seat_reads_the_others_by_name_and_answers_in_parts() -> None:
    scripts = {"agent_a": [answer("fake", "A-ONE"), answer("fake", "A-TWO")]}
    config, pool, _ = seat_pool(load_config("async").model_copy(update={"max_rounds": 2}), scripts)
    terminal = Terminal([
        "open", "It looks like a composite.", "", "1", "0.7",
        "agent_a makes a fair point about the clouds.", "", "fake", "80",
    ])
    verdict = await run_sample(config, SAMPLE, pool, human_seats={"agent_b": terminal.seat()})
    shown = terminal.text
    assert "agent_a, round 2:" in shown and "A-TWO" in shown
    assert "Me, round" not in shown and "Do you agree with me" not in shown
    assert "do you agree with agent_a" in shown.lower()
    assert str(EXAMPLE_IMAGE) in shown and terminal.opened == [EXAMPLE_IMAGE]
    assert "An empty line ends it" in shown and "Type 'open'" in shown
    assert "1) real  2) fake" in shown and "How sure are you?" in shown
    assert "found by retrieval" not in shown and "No retrieved evidence is available." in shown
    before = shown.split("Your own answer, round 1:")[0]
    assert "FINAL ANSWER" not in before, "a person chooses the label; the answer lines are the seat's to write"
    assert f"The post has 1 image:\nImage 1 of the post: {EXAMPLE_IMAGE}" in before
    person = [t for t in verdict.transcript if t.speaker == "agent_b"]
    assert [t.stance for t in person] == ["real", "fake"]
    assert person[0].text == "It looks like a composite.\nFINAL ANSWER: real\nCONFIDENCE: 0.7"
    assert person[1].text.endswith("CONFIDENCE: 0.8")
    assert verdict.label == "fake" and verdict.diagnostics.decided_by == "consensus"


async def test_a_person_as_judge_sees_no_evidence_and_no_image_path() -> None:
    config, pool, _ = seat_pool(load_config("judged"), {"prosecutor": ["P1", "P2"], "defender": ["D1", "D2"]})
    terminal = Terminal(["The defence answered every point.", "", "real", "0.9"])
    verdict = await run_sample(config, SAMPLE, pool, human_seats={"judge": terminal.seat()},
                               evidence=[Evidence(kind="web_page", text="SECRET-EVIDENCE")])
    shown = terminal.text
    assert "prosecutor, round 1:" in shown and "defender, round 2:" in shown
    assert "SECRET-EVIDENCE" not in shown and str(EXAMPLE_IMAGE) not in shown and "Type 'open'" not in shown
    assert "The other seats are prosecutor (debater), defender (debater)" in shown
    assert "found by retrieval" not in shown, "a judge is given no evidence, so it is told of none"
    assert verdict.label == "real" and verdict.confidence == 0.9


async def test_a_person_who_argues_without_answering_is_not_asked_for_a_label() -> None:
    config, pool, _ = seat_pool(load_config("judged"), {"defender": ["D1", "D2"], "judge": [answer("fake")]})
    terminal = Terminal(["The storm never reached the statue.", "", "Still staged.", ""])
    await run_sample(config, SAMPLE, pool, human_seats={"prosecutor": terminal.seat()})
    assert "Your answer?" not in terminal.text and "How sure" not in terminal.text
    assert "Your assigned position, which you keep in every turn: misinformation." in terminal.text


def test_the_terminal_seat_asks_again_for_a_label_or_confidence_it_cannot_use() -> None:
    terminal = Terminal(["My reasons.", "", "maybe", "3", "2", "much", "1.5", "0.25"])
    turn = PersonTurn(screen="SCREEN", labels=("real", "fake"))
    got = terminal.seat().ask_turn(turn)
    assert got == PersonAnswer("My reasons.", "fake", 0.25)
    assert "'maybe' is none of them" in terminal.text and "'3' is none of them" in terminal.text
    assert "'much' is not a number" in terminal.text and "from 0 to 1" in terminal.text


def test_how_to_answer_names_each_step_in_order() -> None:
    text = how_to_answer(PersonTurn(screen="", labels=("real", "fake"), images=(EXAMPLE_IMAGE, EXAMPLE_IMAGE)))
    assert text.index("empty line ends it") < text.index("'open 2'") < text.index("choose your answer (real, fake)")


async def test_a_page_that_asks_for_the_label_itself_shows_no_answer_lines_to_write() -> None:
    from debates.debate_engine.human_input import QueueInput

    prompts = {}
    for asks in (False, True):
        config, pool, _ = seat_pool(load_config("judged"), {"prosecutor": ["P1", "P2"], "defender": ["D1", "D2"]})
        person = QueueInput(asks_answer=asks)
        person.put("The defence answered every point.\nFINAL ANSWER: real\nCONFIDENCE: 0.8")
        await run_sample(config, SAMPLE, pool, human_seats={"judge": person})
        prompts[asks] = person.prompts.get_nowait()
    assert "FINAL ANSWER: <one of: real, fake>" in prompts[False]
    assert "FINAL ANSWER" not in prompts[True] and "prosecutor, round 2:" in prompts[True]


async def test_a_person_in_agent_bs_async_seat_is_streamed_no_other_answer_before_their_own() -> None:
    """LLM-Consensus's first round is independent: the stream a person reads holds agent_a's first answer back
    until agent_b has given theirs, as the model in agent_b's seat would be (the screen says the same)."""
    from m3d_agents.verdict import TranscriptTurn

    scripts = {"agent_a": [answer("fake", "A-ONE", 1.0), answer("fake", "A-TWO", 1.0)]}
    config, pool, _ = seat_pool(load_config("async").model_copy(update={"max_rounds": 2}), scripts)
    terminal = Terminal(["It looks real to me.", "", "real", "0.6", "I still think it is real.", "", "real", "0.6"])
    streamed: list[TranscriptTurn] = []

    def on_turn(turn: TranscriptTurn) -> None:
        streamed.append(turn)
        terminal.shown.append(f"STREAMED {turn.speaker} round {turn.round}: {turn.text}")

    verdict = await run_sample(config, SAMPLE, pool, human_seats={"agent_b": terminal.seat()}, on_turn=on_turn)
    shown = terminal.text
    before_answer = shown.split("STREAMED")[0]
    assert "=== You are agent_b" in before_answer and "How sure" in before_answer
    assert "A-ONE" not in before_answer and "FINAL ANSWER: fake" not in before_answer
    assert [(t.speaker, t.round) for t in streamed] == [("agent_a", 1), ("agent_b", 1), ("agent_a", 2), ("agent_b", 2)]
    assert "agent_a, round 2:" in shown.split("your turn 2 of at most 2")[1]  # round 2 shows the others, as the model's does
    assert [t.speaker for t in verdict.transcript] == ["agent_a", "agent_b", "agent_a", "agent_b"]


async def test_a_person_judge_is_streamed_each_debater_turn_at_once() -> None:
    config, pool, _ = seat_pool(load_config("judged"), {"prosecutor": ["P1", "P2"], "defender": ["D1", "D2"]})
    terminal = Terminal(["The defence answered every point.", "", "real", "0.9"])
    streamed: list[str] = []

    def on_turn(turn) -> None:  # type: ignore[no-untyped-def]
        streamed.append(turn.speaker)
        terminal.shown.append(f"STREAMED {turn.speaker}")

    await run_sample(config, SAMPLE, pool, human_seats={"judge": terminal.seat()}, on_turn=on_turn)
    assert streamed == ["prosecutor", "defender", "prosecutor", "defender", "judge"]
    assert terminal.text.index("STREAMED defender") < terminal.text.index("=== You are judge")


def test_m3d_debate_with_a_person_in_agent_b_prints_agent_as_first_answer_only_after_theirs(tmp_path: Path) -> None:
    """The terminal as a person uses it: ``m3d debate --config async --human-seat agent_b``, against a loopback server."""
    from typer.testing import CliRunner

    from debates.cli.main import app
    from tests.support.openai_stub_server import StubOpenAIServer, completion_body

    def agent_a(body: dict, n: int) -> tuple[int, dict, float]:  # type: ignore[type-arg]
        return 200, completion_body("AGENT-A-ARGUES The clouds are pasted in.\nFINAL ANSWER: fake\nCONFIDENCE: 1.00"), 0.0

    with StubOpenAIServer(agent_a) as server:
        backends = tmp_path / "m3d.yaml"
        backends.write_text(f"backends:\n  stub: {{kind: vllm, base_url: '{server.base_url}', cache: false, vision: false}}\n")
        result = CliRunner().invoke(app, [
            "debate", "--config", "async", "--human-seat", "agent_b", "--max-rounds", "2", "--backend", "stub",
            "--config-file", str(backends), "--retrieval", "off", "--text", "Storm clouds over the Statue of Liberty",
        ], input="It looks real to me.\n\nreal\n0.6\nStill real.\n\nreal\n0.6\n", env={"COLUMNS": "100", "TERM": "dumb"})
    assert result.exit_code == 0, result.output
    out = result.output
    first_answer = out.index("How sure are you?")
    assert "=== You are agent_b" in out[:first_answer]
    assert "AGENT-A-ARGUES" not in out[:first_answer] and "FINAL ANSWER: fake" not in out[:first_answer]
    assert "agent_a · debater · round 1" in out[first_answer:]  # printed once agent_b has answered
    assert out.index("agent_a · debater · round 1") < out.index("agent_b · debater · round 1")


async def test_a_person_whose_seat_is_shown_evidence_is_told_where_it_came_from() -> None:
    config, pool, _ = seat_pool(load_config("async").model_copy(update={"max_rounds": 1}), {"agent_a": [answer("fake")]})
    terminal = Terminal(["It looks staged.", "", "fake", "0.7"])
    await run_sample(config, SAMPLE, pool, human_seats={"agent_b": terminal.seat()},
                     evidence=[Evidence(kind="web_page", text="A photo agency dates the picture to 2011.")])
    assert "Evidence quoted below was found by retrieval for this post" in terminal.text
    assert "A photo agency dates the picture to 2011." in terminal.text
