"""Images as messages carry them: encoded once per picture, however many calls send it.

AutoGen's :class:`~autogen_core.Image` encodes its picture as PNG, and then as base64, every time
anyone asks for it: for each request body (``to_openai_format``), for each response-cache key (its
``model_dump``) and for each recorded exchange. A PNG of a 306 x 306 photo takes tens of milliseconds,
far more than the rest of a model call; and a debate sends each picture once per seat per turn.

Two things make it once per picture. :func:`message_image` gives every seat and call of a sample the
same Image for a picture (as long as the picture is alive); and, from the import of this module on,
an Image keeps its encoding once made (``to_base64``, ``data_uri``): the picture in a message never
changes. The bytes are AutoGen's own, so requests and cache keys are the same as before.
"""

from __future__ import annotations

import weakref
from typing import Any, Callable

from autogen_core import Image
from PIL import Image as PILImage

_KEPT_BASE64 = "_m3d_png_base64"
_KEPT_DATA_URI = "_m3d_data_uri"


def _keeping(encode: Callable[[Image], str], name: str) -> Callable[[Image], str]:
    def kept(self: Image) -> str:
        value: Any = self.__dict__.get(name)
        if value is None:
            value = self.__dict__[name] = encode(self)
        return str(value)

    kept.__wrapped__ = encode  # type: ignore[attr-defined]
    kept.keeps_encoding = True  # type: ignore[attr-defined]
    return kept


if not getattr(Image.to_base64, "keeps_encoding", False):
    _data_uri: Any = Image.__dict__["data_uri"]
    Image.to_base64 = _keeping(Image.to_base64, _KEPT_BASE64)  # type: ignore[method-assign, assignment]
    Image.data_uri = property(_keeping(_data_uri.fget, _KEPT_DATA_URI))  # type: ignore[method-assign, assignment]


_made: dict[int, Image] = {}
"""By the picture's ``id``, for as long as the picture lives (PIL's images cannot be dictionary keys)."""


def message_image(picture: PILImage.Image) -> Image:
    """The image that messages carry for ``picture`` (a prepared sample's, a video frame ...), made once."""
    key = id(picture)
    image = _made.get(key)
    if image is None:
        image = _made[key] = Image.from_pil(picture)
        weakref.finalize(picture, _made.pop, key, None)
    return image
