"""What ``m3d check`` and ``m3d debate`` print with a verdict: its evidence, the tool findings, and a
plain note when the answer comes from the 270M demonstration model."""

from __future__ import annotations

from debates.cli.common import console, print_verdict
from m3d_agents.backends.config import BackendConfig, BackendSettings
from m3d_agents.sample import Sample
from m3d_agents.verdict import EvidenceReport, ProviderReport, Verdict
from tests.support.paths import EXAMPLE_IMAGE

REPORT = EvidenceReport(
    mode="record", kept=4, dropped=1, dropped_why={"language": 1}, network_fetches=4,
    providers=[ProviderReport(provider="google_vision", calls=1, items=5), ProviderReport(provider="serpapi_lens", not_run="no key: set SERPAPI_API_KEY"),
               ProviderReport(provider="pages", calls=3, items=2, failures=["fetching http://x/: HTTP 404"])],
)


def printed(verdict: Verdict, settings: BackendSettings, vision: bool = False) -> str:
    with console.capture() as capture:
        print_verdict(verdict, False, sample=Sample(text="a post", images=[EXAMPLE_IMAGE]), settings=settings, vision=vision)
    return " ".join(capture.get().split())


def test_the_verdict_comes_with_its_evidence_report_tool_findings_and_the_demo_model_note() -> None:
    out = printed(Verdict(sample_id="s", label="fake", backend="local", evidence_report=REPORT), BackendSettings())
    assert "evidence (record): 4 items given to the agents, 1 dropped (language 1); 4 network fetches" in out
    assert "google_vision 5 results" in out
    assert "serpapi_lens not run: no key: set SERPAPI_API_KEY" in out and "pages failed 1x: fetching http://x/: HTTP 404" in out
    assert "tools on image 1: format JPEG" in out
    assert "backend local is the 270M demonstration model" in out


def test_a_real_backend_gets_no_demo_note_and_a_vision_model_saw_the_image_itself() -> None:
    settings = BackendSettings(backends={"gpu": BackendConfig(kind="vllm")})
    out = printed(Verdict(sample_id="s", label="real", backend="gpu", evidence_report=REPORT), settings, vision=True)
    assert "demonstration model" not in out
    assert "tools: the model saw the 1 image(s) itself" in out
    off = printed(Verdict(sample_id="s", label="real", backend="gpu",
                          evidence_report=EvidenceReport(mode="off", note="--retrieval off")), settings, vision=True)
    assert "evidence: retrieval off (--retrieval off)" in off


def test_an_explanation_is_its_own_labelled_block_and_a_fragment_says_it_breaks_off() -> None:
    settings = BackendSettings(backends={"gpu": BackendConfig(kind="vllm")})
    whole = printed(Verdict(sample_id="s", label="real", backend="gpu", rationale="The light matches the sky."), settings)
    assert "explanation: The light matches the sky. evidence" not in whole and "explanation: The light matches the sky." in whole
    assert "breaks off" not in whole
    cut = printed(Verdict(sample_id="s", label="real", backend="gpu", rationale="No more ",
                          evidence_report=EvidenceReport(mode="off", note="--retrieval off")), settings)
    assert "explanation: No more [the answer breaks off here, mid-sentence] evidence: retrieval off" in cut


def test_an_answer_that_repeats_its_prompt_is_said_to_counted_and_the_findings_are_printed_once(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """The embedded model's habit, from a loopback server standing in for it: the answer copies the post and the
    forensic findings from its prompt. m3d check prints the findings once, no copy as an explanation, the count
    in the accounting line, and keeps the note that the 270M model shows plumbing, not judgement."""
    import json as json_module

    from typer.testing import CliRunner

    from debates.cli.main import app
    from tests.support.openai_stub_server import StubOpenAIServer, completion_body

    def reciting(body: dict, n: int) -> tuple[int, dict, float]:  # type: ignore[type-arg]
        user = next(m for m in body["messages"] if m["role"] == "user")
        text = user["content"] if isinstance(user["content"], str) else " ".join(
            p.get("text", "") for p in user["content"] if isinstance(p, dict))
        copied = " ".join(text.split())[:560]
        return 200, completion_body(json_module.dumps({"rationale": copied, "label": "real", "confidence": 0.9})), 0.0

    with StubOpenAIServer(reciting) as server:
        result = CliRunner().invoke(
            app, ["check", "--text", "Storm clouds over the Statue of Liberty during Hurricane Sandy", "--image",
                  str(EXAMPLE_IMAGE), "--retrieval", "off"],
            env={"M3D_LOCAL_BASE_URL": server.base_url, "M3D_CACHE_DIR": str(tmp_path / "cache"), "COLUMNS": "100",
                 "M3D_BACKEND": ""},
        )
    assert result.exit_code == 0, result.output
    out = " ".join(result.output.split())
    assert "explanation: none: the model's answer repeats its prompt" in out
    assert out.count("error_level_analysis: score") == 1, "the forensic findings, once"
    assert "1 answer(s) repeating their prompt" in out
    assert "backend local is the 270M demonstration model" in out and "its verdicts say little" in out


def test_recital_is_told_from_an_answer_that_quotes_a_little() -> None:
    from m3d_agents.recital import recites

    prompt = ("The post under debate: storm clouds over the Statue of Liberty during Hurricane Sandy. Forensics: "
              "error level analysis score 0.36; error levels after re-compression are fairly uniform across the image.")
    assert recites(prompt, "Forensics: error level analysis score 0.36; error levels after re-compression are fairly "
                           "uniform across the image. The post under debate: storm clouds over the Statue of Liberty")
    assert not recites(prompt, "The clouds are lit from the left while the statue is lit from the right, so the sky was "
                               "pasted in; the post says storm clouds over the Statue of Liberty but the light disagrees.")
    assert not recites(prompt, "storm clouds over the Statue")  # too short to tell


async def test_a_debater_repeating_an_earlier_turn_is_not_counted_as_repeating_its_prompt() -> None:
    """A debate's prompt quotes the turns so far; a seat that says again what it said is keeping to its argument."""
    from debates.config_loader import load_config
    from debates.session import run_sample
    from tests.support.debate import SAMPLE, answer, seat_pool

    same = answer("fake", "The clouds are lit from the left while the statue is lit from the right, so the sky was pasted in.")
    config, pool, _ = seat_pool(load_config("async").model_copy(update={"max_rounds": 2}),
                                {"agent_a": [same, same], "agent_b": [answer("real", "Storms were common that week."), same]})
    verdict = await run_sample(config, SAMPLE, pool)
    assert verdict.accounting.recited_prompts == 0 and not verdict.rationale_recites_prompt


def test_a_copy_of_the_post_counts_again_after_an_earlier_answer_copied_it_too() -> None:
    from m3d_agents.recital import given, recites, runs

    post = "Storm clouds over the Statue of Liberty during Hurricane Sandy, photographed from the harbour at dusk."
    argument = "The light on the statue comes from the left while the clouds are lit from the right, so it is pasted."
    copied = f"{post}"
    history = f"The post under debate: {post}\n\nYour own answer, round 1:\n{copied}\n\nagent_b, round 1:\n{argument}"
    material = given(history, [runs(copied), runs(argument)])
    assert recites(material, post), "the post is still the prompt's own material"
    assert not recites(material, argument), "repeating a quoted argument keeps to it"
    assert not recites(given("The post: something else entirely, with no words in common at all.", [runs(post)]), argument)
