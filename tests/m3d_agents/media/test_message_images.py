"""A picture is encoded once for every message that carries it, with AutoGen's own bytes."""

from __future__ import annotations

import gc
import weakref
from typing import Any

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


def test_the_encoding_is_autogens_own() -> None:
    source = picture()
    ours = message_image(source)
    assert type(ours) is Image
    encode: Any = Image.to_base64
    assert ours.to_base64() == encode.__wrapped__(ours), "what AutoGen's own encoding makes"
    assert ours.to_openai_format() == {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{ours.to_base64()}",
                                                                         "detail": "auto"}}
    message = UserMessage(content=["look", ours], source="user")
    assert message.model_dump()["content"][1] == {"data": ours.to_base64()}


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
    kept = weakref.ref(message_image(source))
    kept_encoding = message_image(source).to_base64()
    assert message_images.kept_encoding_bytes(source) == len(kept_encoding)
    del source
    gc.collect()
    assert kept() is None, "nothing outside the picture keeps its message image (and its encoding) alive"


def test_the_image_shares_the_pictures_pixels_and_keeps_one_encoding() -> None:
    source = picture()
    image = message_image(source)
    assert image.image is source, "no second copy of the pixels"
    assert message_images.kept_encoding_bytes(source) == 0
    uri = image.data_uri
    assert uri == f"data:image/png;base64,{image.to_base64()}"
    assert [v for v in vars(image).values() if isinstance(v, str)] == [image.to_base64()], "the data URI is not kept beside it"
    grey = PILImage.new("L", (4, 4), 9)
    assert message_image(grey).image.mode == "RGB" and message_image(grey).image is not grey
