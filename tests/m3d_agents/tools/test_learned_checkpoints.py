"""The learned-detector slot loads Hugging Face checkpoints from a folder: safetensors only, no code from the checkpoint."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from debates.config_loader import load_config, parse_config
from m3d_agents.backends.config import ToolBinding
from m3d_agents.backends.metering import UsageLedger
from m3d_agents.errors import InputError
from m3d_agents.media.images import load_image, prepare_sample
from m3d_agents.sample import Sample
from m3d_agents.tools.cards import ToolContext, ToolSetup
from m3d_agents.tools.catalogue import default_registry
from m3d_agents.tools.forensics.base import analysis_image
from m3d_agents.tools.forensics.learned import MODEL_ENV, analyse_learned, describe_checkpoint
from tests.support.paths import EXAMPLE_IMAGE
from tests.support.tiny_detectors import tiny_classifier, tiny_segmenter

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")


@pytest.fixture(autouse=True)
def no_env_model(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(MODEL_ENV, raising=False)


def test_a_classification_checkpoint_gives_the_fake_labels_probability(tmp_path: Path) -> None:
    folder = tiny_classifier(tmp_path / "patchcraft-like")
    image = load_image(EXAMPLE_IMAGE)
    result = analyse_learned(image, folder)
    model = transformers.AutoModelForImageClassification.from_pretrained(folder)
    processor = transformers.AutoImageProcessor.from_pretrained(folder)
    from PIL import Image

    pixels = processor(images=Image.fromarray(analysis_image(image.ref()).rgb), return_tensors="pt")["pixel_values"]
    with torch.inference_mode():
        expected = float(torch.softmax(model(pixel_values=pixels).logits, dim=1)[0, 1])
    assert result.informative and result.score == pytest.approx(expected, abs=1e-4)
    assert result.heatmap is not None and result.heatmap.shape == (306, 306) and np.allclose(result.heatmap, result.score, atol=1e-4)
    assert result.finding.startswith("classification checkpoint patchcraft-like: forgery probability")


def test_a_segmentation_checkpoint_gives_a_heat_map_and_its_maximum(tmp_path: Path) -> None:
    folder = tiny_segmenter(tmp_path / "trufor-like")
    image = load_image(EXAMPLE_IMAGE)
    result = analyse_learned(image, folder)
    model = transformers.AutoModelForSemanticSegmentation.from_pretrained(folder)
    rgb = analysis_image(image.ref()).rgb
    from PIL import Image

    resized = np.asarray(Image.fromarray(rgb).resize((48, 48), Image.Resampling.BILINEAR), dtype=np.float32) / 255.0
    with torch.inference_mode():
        logits = model(pixel_values=torch.from_numpy(resized).permute(2, 0, 1).unsqueeze(0)).logits
    probabilities = torch.softmax(logits, dim=1)[0, 1].numpy()
    assert result.score == pytest.approx(float(probabilities.max()), abs=1e-4)
    assert result.heatmap is not None and result.heatmap.shape == rgb.shape[:2]
    assert result.heatmap.min() < result.heatmap.max(), "a per-pixel map, not one value"


def test_the_tool_reads_its_checkpoint_from_the_tools_block(tmp_path: Path) -> None:
    folder = tiny_classifier(tmp_path / "ckpt")
    data = {**load_config("check").model_dump(exclude_none=True), "tools": {"learned_detector": {"model": str(folder)}}}
    config = parse_config(data, "mine.yaml")
    ledger = UsageLedger()
    context = ToolContext(prepare_sample(Sample(text="x", images=[EXAMPLE_IMAGE])), ledger=ledger,
                          setup=ToolSetup(bindings=dict(config.tools)))
    answer = default_registry().bind("learned_detector", context)
    import asyncio

    text = asyncio.run(answer(0))
    assert text.startswith("learned_detector: score") and "classification checkpoint ckpt" in text
    assert ledger.accounting().tools["learned_detector"].model_dump() == {"calls": 1, "unavailable": 0}
    empty = ToolContext(prepare_sample(Sample(text="x", images=[EXAMPLE_IMAGE])), ledger=ledger)
    assert "unavailable: no learned detector configured" in asyncio.run(default_registry().bind("learned_detector", empty)(0))
    assert ledger.accounting().tools["learned_detector"].model_dump() == {"calls": 2, "unavailable": 1}
    assert describe_checkpoint(folder).startswith(f"Hugging Face checkpoint {folder} (ViTForImageClassification)")


def test_pickled_weights_are_refused(tmp_path: Path) -> None:
    folder = tiny_classifier(tmp_path / "pickled", safetensors=False)
    assert not list(folder.glob("*.safetensors"))
    with pytest.raises(InputError, match="only safetensors are loaded"):
        analyse_learned(load_image(EXAMPLE_IMAGE), folder)


def test_code_shipped_with_a_checkpoint_never_runs(tmp_path: Path) -> None:
    folder = tiny_classifier(tmp_path / "remote")
    marker = tmp_path / "ran"
    (folder / "modeling_evil.py").write_text(f"open({str(marker)!r}, 'w').write('ran')\n")
    config = json.loads((folder / "config.json").read_text())
    config.update({"model_type": "evil", "architectures": ["EvilForImageClassification"],
                   "auto_map": {"AutoConfig": "modeling_evil.EvilConfig",
                                "AutoModelForImageClassification": "modeling_evil.EvilForImageClassification"}})
    (folder / "config.json").write_text(json.dumps(config))
    with pytest.raises(InputError, match="tools.learned_detector.model"):
        analyse_learned(load_image(EXAMPLE_IMAGE), folder)
    assert not marker.exists()


def test_the_manipulated_label_is_found_or_asked_for(tmp_path: Path) -> None:
    folder = tiny_classifier(tmp_path / "unnamed", labels={0: "LABEL_0", 1: "LABEL_1"})
    image = load_image(EXAMPLE_IMAGE)
    with pytest.raises(InputError, match="say which label of unnamed means manipulated; its labels: LABEL_0, LABEL_1") as caught:
        analyse_learned(image, folder)
    assert caught.value.field == "tools.learned_detector.positive_label"
    assert analyse_learned(image, folder, "LABEL_1").informative
    with pytest.raises(InputError, match="'tampered' is not a label of unnamed"):
        analyse_learned(image, folder, "tampered")


def test_a_positive_label_belongs_only_to_a_tool_that_loads_weights() -> None:
    assert ToolBinding(positive_label="fake").positive_label == "fake"
    data = {**load_config("check").model_dump(exclude_none=True), "tools": {"ocr": {"positive_label": "fake"}}}
    with pytest.raises(InputError, match="ocr loads no weights"):
        parse_config(data, "mine.yaml")
