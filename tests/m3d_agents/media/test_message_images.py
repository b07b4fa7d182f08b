"""A picture is encoded once for every message that carries it, with AutoGen's own bytes."""

from __future__ import annotations

import gc

import pytest
from autogen_core import Image
from autogen_core.models import UserMessage
from PIL import Image as PILImage

from m3d_agents.media import message_images
from m3d_agents.media.message_images import message_image


def picture() -> PILImage.Image:
    image = PILImage.new("RGB", (40, 30), (10, 120, 200))
    image.putpixel((3, 4), (255, 0, 0))
    return image


def test_the_encoding_is_autogens_own(monkeypatch: pytest.MonkeyPatch) -> None:
    source = picture()
    ours, theirs = message_image(source), Image.from_pil(source)
    assert ours.to_openai_format() == theirs.to_openai_format()
    assert ours.to_base64() == theirs.to_base64() and ours.data_uri == theirs.data_uri
    message = UserMessage(content=["look", ours], source="user")
    assert message.model_dump() == UserMessage(content=["look", theirs], source="user").model_dump()


def test_one_picture_is_encoded_once_for_every_seat_and_call(monkeypatch: pytest.MonkeyPatch) -> None:
    saves: list[str] = []
    real_save = PILImage.Image.save

    def counting_save(self: PILImage.Image, *args: object, **kwargs: object) -> None:
        saves.append(str(kwargs.get("format")))
        real_save(self, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(PILImage.Image, "save", counting_save)
    source = picture()
    seats = [message_image(source) for _ in range(3)]
    assert seats[0] is seats[1] is seats[2]
    for _ in range(4):
        seats[0].to_openai_format()
        UserMessage(content=["turn", seats[1]], source="user").model_dump()
    assert saves == ["PNG"]
    assert message_image(picture()) is not seats[0], "another picture is another image"


def test_an_image_is_forgotten_with_its_picture() -> None:
    source = picture()
    message_image(source)
    assert id(source) in message_images._made
    key = id(source)
    del source
    gc.collect()
    assert key not in message_images._made
