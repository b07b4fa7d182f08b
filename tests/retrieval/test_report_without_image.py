"""A post without an image has no use for reverse image search: its evidence report does not list the
image providers' missing keys as problems, while a post with an image still does."""

from __future__ import annotations

from retrieval.report import EvidenceLog


def test_image_providers_are_no_problem_of_a_post_without_an_image() -> None:
    log = EvidenceLog("record", not_run={"google_vision": "no key: set GOOGLE_CLOUD_VISION_KEY",
                                         "serper": "no key: set SERPER_API_KEY"}, image_providers=["google_vision"])
    log.without_image("text-only")
    text_only = " ".join(log.report("text-only").lines())
    assert "google_vision" not in text_only and "serper not run: no key: set SERPER_API_KEY" in text_only
    with_image = " ".join(log.report("with-image").lines())
    assert "google_vision not run: no key" in with_image
