"""Images as messages carry them: encoded once per picture, however many calls send it.

AutoGen's :class:`~autogen_core.Image` encodes its picture as PNG, and then as base64, every time
anyone asks for it: for each request body (``to_openai_format``), for each response-cache key (its
``model_dump``) and for each recorded exchange. A PNG of a 306 x 306 photo takes tens of milliseconds,
far more than the rest of a model call; and a debate sends each picture once per seat per turn.

:func:`message_image` gives the one :class:`MessageImage` of a picture (the same object for every
seat and call of a sample, as long as the picture is alive), and a :class:`MessageImage` keeps its
encoding once made. The bytes are the ones AutoGen makes, so requests and cache keys are unchanged.
"""

from __future__ import annotations

import weakref

from autogen_core import Image
from PIL import Image as PILImage


class MessageImage(Image):
    """AutoGen's image, which encodes its picture once and keeps the encoding (a picture in a message never changes)."""

    def __init__(self, image: PILImage.Image) -> None:
        super().__init__(image)
        self._base64: str | None = None
        self._data_uri: str | None = None

    def to_base64(self) -> str:
        if self._base64 is None:
            self._base64 = super().to_base64()
        return self._base64

    @property
    def data_uri(self) -> str:
        if self._data_uri is None:
            self._data_uri = super().data_uri
        return self._data_uri


_made: dict[int, MessageImage] = {}
"""By the picture's ``id``, for as long as the picture lives (PIL's images cannot be dictionary keys)."""


def message_image(picture: PILImage.Image) -> MessageImage:
    """The image that messages carry for ``picture`` (a prepared sample's, a video frame ...), made once."""
    key = id(picture)
    image = _made.get(key)
    if image is None:
        image = _made[key] = MessageImage(picture)
        weakref.finalize(picture, _made.pop, key, None)
    return image
