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
