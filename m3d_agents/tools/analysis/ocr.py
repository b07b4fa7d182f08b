"""Text inside an image, read with Tesseract: memes and screenshots carry their claim in pixels."""

from __future__ import annotations

import shutil

from pydantic import BaseModel, Field

from m3d_agents.isolation import Item, ItemLost, parse
from m3d_agents.media.images import PreparedImage

NAME = "ocr"
MIN_CONFIDENCE = 40.0


class OcrResult(BaseModel):
    available: bool
    text: str = ""
    words: int = 0
    mean_confidence: float | None = Field(None, description="Tesseract's word confidence, 0-100")
    reason: str = ""

    def for_agents(self) -> str:
        if not self.available:
            return f"OCR: unavailable: {self.reason}"
        if not self.text:
            return "OCR: no readable text in the image"
        return f"OCR: text in the image (confidence {self.mean_confidence:.0f}/100): \"{self.text}\""


def tesseract_missing() -> str | None:
    try:
        import pytesseract  # noqa: F401
    except ImportError:
        return "the pytesseract package is not installed"
    if shutil.which("tesseract") is None:
        return "the tesseract program is not installed (Debian: apt-get install tesseract-ocr)"
    return None


def read_text(image: PreparedImage, language: str = "eng") -> OcrResult:
    """Words Tesseract reads with at least :data:`MIN_CONFIDENCE`, in reading order; Tesseract and its
    reading of the pixels run in a worker of the parser pool (:mod:`m3d_agents.isolation`)."""
    missing = tesseract_missing()
    if missing:
        return OcrResult(available=False, reason=missing)
    greyscale = image.image.convert("L")
    if max(greyscale.size) < 600:
        factor = 600 / max(greyscale.size)
        greyscale = greyscale.resize((int(greyscale.width * factor), int(greyscale.height * factor)))
    try:
        return parse(Item("image", str(image.source), "OCR"), read_text_here, greyscale.size, greyscale.tobytes(), language,
                     deadline="analysis")
    except ItemLost as lost:
        return OcrResult(available=False, reason=lost.line)


def read_text_here(size: tuple[int, int], greyscale: bytes, language: str = "eng") -> OcrResult:
    """What :func:`read_text` asks a parser worker: Tesseract on 8-bit grey pixels of ``size``."""
    import pytesseract
    from PIL import Image

    picture = Image.frombytes("L", size, greyscale)
    try:
        data = pytesseract.image_to_data(picture, lang=language, output_type=pytesseract.Output.DICT)
    except pytesseract.TesseractError as exc:
        return OcrResult(available=False, reason=f"tesseract failed: {exc.message.strip()[:200]}")
    words, confidences = [], []
    lines: dict[tuple[int, int, int], list[str]] = {}
    for i, word in enumerate(data["text"]):
        confidence = float(data["conf"][i])
        if word.strip() and confidence >= MIN_CONFIDENCE:
            key = (data["block_num"][i], data["par_num"][i], data["line_num"][i])
            lines.setdefault(key, []).append(word.strip())
            words.append(word)
            confidences.append(confidence)
    text = " / ".join(" ".join(line) for _, line in sorted(lines.items()))
    mean = sum(confidences) / len(confidences) if confidences else None
    return OcrResult(available=True, text=text, words=len(words), mean_confidence=mean)
