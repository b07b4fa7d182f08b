"""What a person in a seat reads and is asked: the other seats by name, the image's path, how to answer,
the label as a choice and the confidence as a number; and what their answer becomes."""

from __future__ import annotations

from pathlib import Path

from debates.chat.human_input import PersonAnswer, PersonTurn, TerminalSeat, how_to_answer
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
    from debates.chat.human_input import QueueInput

    prompts = {}
    for asks in (False, True):
        config, pool, _ = seat_pool(load_config("judged"), {"prosecutor": ["P1", "P2"], "defender": ["D1", "D2"]})
        person = QueueInput(asks_answer=asks)
        person.put("The defence answered every point.\nFINAL ANSWER: real\nCONFIDENCE: 0.8")
        await run_sample(config, SAMPLE, pool, human_seats={"judge": person})
        prompts[asks] = person.prompts.get_nowait()
    assert "FINAL ANSWER: <one of: real, fake>" in prompts[False]
    assert "FINAL ANSWER" not in prompts[True] and "prosecutor, round 2:" in prompts[True]
