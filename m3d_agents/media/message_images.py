"""Images as messages carry them: encoded once per picture, however many calls send it.

AutoGen's :class:`~autogen_core.Image` encodes its picture as PNG, and then as base64, every time
anyone asks for it: for each request body (``to_openai_format``), for each response-cache key (its
``model_dump``) and for each recorded exchange. A PNG of a 306 x 306 photo takes tens of milliseconds,
far more than the rest of a model call; and a debate sends each picture once per seat per turn.

Two things make it once per picture. :func:`message_image` gives every seat and call of a sample the
same Image for a picture (as long as the picture is alive); and, from the import of this module on,
an Image keeps its PNG encoding once made (``to_base64``): the picture in a message never changes.
The bytes are AutoGen's own, so requests and cache keys are the same as before.

What that costs in memory is kept to one copy of each: the Image shares the picture's pixels rather
than converting them into a copy of its own (the picture is RGB already), and its ``data_uri`` is put
together from the kept encoding on each use instead of being kept beside it. The cache of prepared
images counts the kept encoding in its bound (:func:`kept_encoding_bytes`).
"""

from __future__ import annotations

from typing import Any, Callable

from autogen_core import Image
from PIL import Image as PILImage

_KEPT_BASE64 = "_m3d_png_base64"
_MESSAGE_IMAGE = "_m3d_message_image"
"""Where a picture keeps its message image: on the picture, so that the two live and go together."""


def _keeping(encode: Callable[[Image], str], name: str) -> Callable[[Image], str]:
    def kept(self: Image) -> str:
        value: Any = self.__dict__.get(name)
        if value is None:
            value = self.__dict__[name] = encode(self)
        return str(value)

    kept.__wrapped__ = encode  # type: ignore[attr-defined]
    kept.keeps_encoding = True  # type: ignore[attr-defined]
    return kept


def _png_data_uri(self: Image) -> str:
    # AutoGen's data_uri decodes the base64 again to find the type; to_base64 always writes a PNG.
    return f"data:image/png;base64,{self.to_base64()}"


if not getattr(Image.to_base64, "keeps_encoding", False):
    Image.to_base64 = _keeping(Image.to_base64, _KEPT_BASE64)  # type: ignore[method-assign, assignment]
    Image.data_uri = property(_png_data_uri)  # type: ignore[method-assign, assignment]


def message_image(picture: PILImage.Image) -> Image:
    """The image that messages carry for ``picture`` (a prepared sample's, a video frame ...), made once."""
    image: Image | None = picture.__dict__.get(_MESSAGE_IMAGE)
    if image is None:
        if picture.mode == "RGB":
            image = Image.__new__(Image)
            image.image = picture
        else:
            image = Image.from_pil(picture)
        picture.__dict__[_MESSAGE_IMAGE] = image
    return image


def kept_encoding_bytes(picture: PILImage.Image) -> int:
    """The bytes of the encoding kept for ``picture``'s message image (0 before one is sent)."""
    image: Image | None = picture.__dict__.get(_MESSAGE_IMAGE)
    return len(image.__dict__.get(_KEPT_BASE64) or "") if image is not None else 0
