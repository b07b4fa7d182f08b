"""The transcript step: audio decoded with PyAV, a tiny random Whisper through transformers' ASR pipeline, a cache per video,
and FakeTT and FakeSV reading transcripts (their own, else the recogniser's)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from m3d_agents.datasets import load_dataset
from m3d_agents.errors import InputError
from m3d_agents.media.asr import RATE, Transcriber, decode_audio
from tests.support.videos import make_clip

pytestmark = pytest.mark.train


@pytest.fixture(scope="module")
def whisper(tmp_path_factory: pytest.TempPathFactory) -> Path:
    pytest.importorskip("transformers")
    from tests.support.tiny_whisper import tiny_whisper

    return tiny_whisper(tmp_path_factory.mktemp("whisper"))


@pytest.fixture(scope="module")
def speaking(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_clip(tmp_path_factory.mktemp("clips") / "tone.mp4", seconds=2, audio=True)


def test_the_audio_track_is_decoded_to_16_khz_mono(speaking: Path, tmp_path: Path) -> None:
    audio = decode_audio(speaking)
    assert audio is not None and audio.dtype == np.float32 and abs(len(audio) - 2 * RATE) < RATE // 10
    spectrum = np.abs(np.fft.rfft(audio[RATE // 4 : RATE // 4 + RATE]))
    assert abs(int(np.argmax(spectrum)) - 440) <= 2, "the clip's 440 Hz tone"
    assert decode_audio(make_clip(tmp_path / "silent.mp4", seconds=1)) is None


def test_a_tiny_whisper_transcribes_a_clip_once_and_the_cache_answers_after(whisper: Path, speaking: Path, tmp_path: Path,
                                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    transcriber = Transcriber(whisper, cache_dir=tmp_path / "asr")
    direct = transcriber.pipeline()({"raw": decode_audio(speaking), "sampling_rate": RATE})["text"]
    first = transcriber.transcribe(speaking)
    assert first.text == " ".join(direct.split()) and first.text and not first.cached
    assert transcriber.cache_path(speaking).is_file()

    def refuse(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("a cached video is not transcribed again")

    again = Transcriber(whisper, cache_dir=tmp_path / "asr")
    monkeypatch.setattr(again, "pipeline", refuse)
    assert again.transcribe(speaking) == type(first)(first.text, "", cached=True)
    silent = Transcriber(whisper, cache_dir=tmp_path / "asr").transcribe(make_clip(tmp_path / "silent.mp4", seconds=1))
    assert (silent.text, silent.reason) == (None, "the video has no audio track")
    with pytest.raises(InputError, match="asr_model: .* is not a transformers model folder"):
        Transcriber(tmp_path)


def test_fakett_and_fakesv_read_their_transcripts_else_the_recogniser_hears_the_video(whisper: Path, speaking: Path, tmp_path: Path,
                                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("M3D_CACHE_DIR", str(tmp_path / "cache"))
    videos = tmp_path / "videos"
    videos.mkdir()
    (videos / "7001.mp4").write_bytes(speaking.read_bytes())
    (videos / "7002.mp4").write_bytes(speaking.read_bytes())
    rows = [{"video_id": "7001", "description": "Flood on the highway", "annotation": "fake", "publish_time": 1661990400000},
            {"video_id": "7002", "description": "Storm news", "annotation": "real", "publish_time": 1662990400000,
             "transcript": "the storm passed"}]
    data = tmp_path / "fakett.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in rows))
    plain = load_dataset(f"fakett:{data}")
    assert [s.video.transcript for s in plain.samples] == [None, "the storm passed"]  # type: ignore[union-attr]
    heard = load_dataset(f"fakett:{data}", {"asr_model": str(whisper)})
    expected = Transcriber(whisper).transcribe(videos / "7001.mp4").text
    assert [s.video.transcript for s in heard.samples] == [expected, "the storm passed"]  # type: ignore[union-attr]

    fakesv = tmp_path / "fakesv.jsonl"
    fakesv.write_text(json.dumps({"video_id": "a1", "title": "A flood in the city", "keywords": "暴雨 城市", "annotation": "假"}) + "\n"
                      + json.dumps({"video_id": "a2", "keywords": "台风", "annotation": "真"}) + "\n")
    loaded = load_dataset(f"fakesv:{fakesv}")
    assert [s.text for s in loaded.samples] == ["A flood in the city\nKeywords: 暴雨 城市", "台风"], "titles and keywords both"
