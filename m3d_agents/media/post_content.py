"""How a post is shown to a model: the image itself for a vision backend, text about it otherwise.

Text-only backends (the embedded default) cannot see pixels, so each image is described by the
registered describers, for example OCR or forensic tools. A describer never invents content: it
reports what a tool measured, or nothing.
"""

from __future__ import annotations

from typing import Callable

from autogen_core import Image as AgentImage

import prompts

from m3d_agents.media.images import PreparedImage, PreparedSample
from m3d_agents.media.message_images import message_image

ImageDescriber = Callable[[PreparedImage], str]

_describers: list[ImageDescriber] = []


def register_describer(describer: ImageDescriber) -> None:
    """Add a tool-backed describer used for text-only backends (called in registration order)."""
    if describer not in _describers:
        _describers.append(describer)


def unregister_describer(describer: ImageDescriber) -> None:
    if describer in _describers:
        _describers.remove(describer)


def registered_describers() -> list[ImageDescriber]:
    return list(_describers)


def basic_facts(image: PreparedImage) -> str:
    width, height = image.original_size
    return f"format {image.format}, {width}x{height} pixels, sha256 {image.sha256[:12]}"


def describe_image(image: PreparedImage) -> str:
    lines = [basic_facts(image)]
    for describer in _describers:
        text = describer(image).strip()
        if text:
            lines.append(text)
    return "\n".join(lines)


def image_context(prepared: PreparedSample, vision: bool) -> str:
    """The text that stands for the images in a prompt, with the data set's guarantee that they are
    authentic when it gives one (out-of-context data sets)."""
    if not prepared.images:
        return "The post has no image."
    authentic = f"\n{prompts.load('common/images_authentic')}" if prepared.sample.metadata.images_authentic else ""
    if vision:
        return f"The post has {len(prepared.images)} image(s), attached below.{authentic}"
    parts = [
        "The post has an image, but you cannot see it. What analysis tools report about it:",
    ]
    for i, image in enumerate(prepared.images, start=1):
        parts.append(f"Image {i}: {describe_image(image)}")
    return "\n".join(parts) + authentic


def user_content(text: str, prepared: PreparedSample, vision: bool, then: str = "") -> str | list[str | AgentImage]:
    """A user-message body: ``text`` (what is the same for every call about this post), the images,
    then ``then`` (what changes from call to call), so that a server's prefix cache can reuse
    everything up to ``then``. Without images it is the plain text ``text + then``."""
    if not vision or not prepared.images:
        return text + then
    return [text, *(message_image(image.image) for image in prepared.images), *([then] if then else [])]


def described_images(prepared: PreparedSample, vision: bool, *, descriptions: bool = True) -> str:
    """The images as an agent given a description sees them: attached (vision) with the shared
    description of each, or, without vision, the description alone (:attr:`PreparedSample.descriptions`).

    Unlike :func:`image_context` it never adds the registered tool findings (forensics), which some
    agents must not see; ``descriptions=False`` leaves the descriptions out where the image is attached.
    """
    if not prepared.images:
        return "The post has no image."
    authentic = f"\n{prompts.load('common/images_authentic')}" if prepared.sample.metadata.images_authentic else ""
    texts = prepared.descriptions or [basic_facts(image) for image in prepared.images]
    if vision:
        head = f"The post has {len(prepared.images)} image(s), attached below."
        if not descriptions or not prepared.descriptions:
            return head + authentic
        body = [f"A vision model's description of image {i}:\n{text}" for i, text in enumerate(texts, start=1)]
        return "\n".join([head, *body]) + authentic
    body = [f"Image {i}: {text}" for i, text in enumerate(texts, start=1)]
    return "\n".join(["The post has an image, but you cannot see it. What can be read off it without seeing it:", *body]) + authentic
