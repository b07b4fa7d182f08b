"""Speech to text for video posts: the transcript of FactGuard's input triplet (n_aud, paper line 65).

The paper extracts "the speech-to-text transcript ... from the audio stream" without naming the
recogniser. This step runs ``transformers``' automatic-speech-recognition pipeline on a model
folder the user gives (a Whisper-style model; nothing is downloaded), on the video's audio decoded
with PyAV to 16 kHz mono, in 30-second chunks. A transcript is cached per video and model (the
video file's SHA-256, the model folder's configuration), so a data set is transcribed once. A video
without an audio track has no transcript, and says so; a recogniser that cannot run is an error
naming the model, never an empty transcript.
"""

from __future__ import annotations

import hashlib
import logging
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from m3d_agents.backends.config import default_cache_root
from m3d_agents.errors import InputError
from m3d_agents.isolation import Item, parse
from m3d_agents.safe_files import read_text_nofollow, replace_json
from m3d_agents.safe_json import loads_bounded

log = logging.getLogger(__name__)

RATE = 16_000
CHUNK_S = 30.0


@dataclass(frozen=True)
class Transcript:
    text: str | None
    """None when there is nothing to transcribe (``reason`` says why)."""
    reason: str = ""
    cached: bool = False


def decode_audio(path: Path, field: str = "video") -> np.ndarray | None:
    """The first audio stream of ``path`` as 16 kHz mono float32 samples, or None when it has none; FFmpeg
    decodes it in a worker of the parser pool (:mod:`m3d_agents.isolation`), so a file that crashes or hangs
    it costs that video alone."""
    path = Path(path)
    return parse(Item("video", str(path), "the audio decoder", field), decode_audio_here, path.resolve(), path, field,
                 deadline="analysis")


def decode_audio_here(file: Path, path: Path, field: str = "video") -> np.ndarray | None:
    """What :func:`decode_audio` asks a parser worker (``file`` is the absolute path, ``path`` its name in errors)."""
    import av

    try:
        container = av.open(str(file), mode="r")
    except (av.error.FFmpegError, UnicodeDecodeError) as exc:
        raise InputError(field, f"{path} is not a media file FFmpeg can read ({type(exc).__name__})") from exc
    with container:
        if not container.streams.audio:
            return None
        resampler = av.AudioResampler(format="flt", layout="mono", rate=RATE)
        chunks = []
        for frame in container.decode(container.streams.audio[0]):
            for out in resampler.resample(frame):
                chunks.append(out.to_ndarray().reshape(-1))
        for out in resampler.resample(None):
            chunks.append(out.to_ndarray().reshape(-1))
    return np.concatenate(chunks).astype(np.float32) if chunks else np.zeros(0, np.float32)


def file_hash(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


class Transcriber:
    """A speech recogniser from a local model folder, with a per-video cache of its transcripts."""

    def __init__(self, model: Path, cache_dir: Path | None = None, language: str | None = None) -> None:
        if not (model / "config.json").is_file():
            raise InputError("asr_model", f"{model} is not a transformers model folder (no config.json)")
        self.model = model
        self.language = language
        config = (model / "config.json").read_bytes()
        self.model_key = hashlib.sha256(str(model.resolve()).encode() + b"\n" + config).hexdigest()[:16]
        self.cache_dir = cache_dir or default_cache_root() / "asr"
        self._pipeline: Any = None

    def pipeline(self) -> Any:
        if self._pipeline is None:
            from transformers import pipeline

            try:
                self._pipeline = pipeline("automatic-speech-recognition", model=str(self.model), chunk_length_s=CHUNK_S)
            except (OSError, ValueError) as exc:
                raise InputError("asr_model", f"{self.model} cannot run as a speech recogniser ({type(exc).__name__}: {exc})") from None
        return self._pipeline

    def cache_path(self, video: Path) -> Path:
        return self.cache_dir / self.model_key / f"{file_hash(video)}.json"

    def transcribe(self, video: Path) -> Transcript:
        """The speech in ``video``, from the cache when this model transcribed the same file before."""
        cached = self.cache_path(video)
        if os.path.lexists(cached):
            stored = read_cached_transcript(cached)
            if stored is not None:
                return stored
        audio = decode_audio(video)
        if audio is None:
            found = Transcript(None, "the video has no audio track")
        elif not audio.size:
            found = Transcript(None, "the audio track is empty")
        else:
            kwargs: dict[str, Any] = {"generate_kwargs": {"language": self.language}} if self.language else {}
            result = self.pipeline()({"raw": audio, "sampling_rate": RATE}, **kwargs)
            text = " ".join(str(result.get("text") or "").split())
            found = Transcript(text or None, "" if text else "no speech was recognised")
        try:
            cached.parent.mkdir(parents=True, exist_ok=True)
            replace_json(cached, {"text": found.text, "reason": found.reason, "model": str(self.model)}, indent=None)
        except (InputError, OSError) as exc:
            log.warning("transcript cache: could not store %s (%s)", cached, getattr(exc, "problem", None) or exc)
        return found


def read_cached_transcript(path: Path) -> Transcript | None:
    """A stored transcript (JSON data, never read through a link); None, with a warning naming the file,
    when it does not read, so the video is transcribed again."""
    try:
        data = loads_bounded(read_text_nofollow(path, 16 * 1024 * 1024))
        text, reason = data.get("text"), data.get("reason", "")
        if (text is not None and not isinstance(text, str)) or not isinstance(reason, str):
            raise ValueError("not a stored transcript")
    except (InputError, OSError, ValueError, AttributeError) as exc:
        log.warning("transcript cache: ignoring the unreadable entry %s (%s)", path, getattr(exc, "problem", None) or exc)
        return None
    return Transcript(text, reason, cached=True)
