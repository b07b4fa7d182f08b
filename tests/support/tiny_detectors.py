"""Tiny randomly initialised forgery detectors in the Hugging Face format, built and saved by the tests themselves."""

from __future__ import annotations

from pathlib import Path


def tiny_classifier(folder: Path, labels: dict[int, str] | None = None, safetensors: bool = True) -> Path:
    """A one-layer ViT image classifier (32x32 input) with its image processor; labels real/fake by default."""
    import torch
    from transformers import ViTConfig, ViTForImageClassification, ViTImageProcessor

    torch.manual_seed(0)
    names = labels or {0: "real", 1: "fake"}
    config = ViTConfig(image_size=32, patch_size=8, hidden_size=16, num_hidden_layers=1, num_attention_heads=2,
                       intermediate_size=32, num_labels=len(names), id2label=names,
                       label2id={name: index for index, name in names.items()})
    model = ViTForImageClassification(config)
    model.save_pretrained(folder)
    if not safetensors:
        # Weights as a pickle, as older checkpoints ship them; the slot must refuse to unpickle them.
        (folder / "model.safetensors").unlink()
        torch.save(model.state_dict(), folder / "pytorch_model.bin")
    ViTImageProcessor(size={"height": 32, "width": 32}).save_pretrained(folder)
    return folder


def tiny_segmenter(folder: Path) -> Path:
    """A one-stage SegFormer that maps every pixel to authentic or manipulated; no image processor is saved."""
    import torch
    from transformers import SegformerConfig, SegformerForSemanticSegmentation

    torch.manual_seed(0)
    config = SegformerConfig(num_channels=3, num_encoder_blocks=1, depths=[1], sr_ratios=[1], hidden_sizes=[8], patch_sizes=[3],
                             strides=[2], num_attention_heads=[1], mlp_ratios=[1], decoder_hidden_size=8, num_labels=2,
                             id2label={0: "authentic", 1: "manipulated"}, label2id={"authentic": 0, "manipulated": 1},
                             image_size=48)
    SegformerForSemanticSegmentation(config).save_pretrained(folder)
    return folder
