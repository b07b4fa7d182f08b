"""ClipScout: a close look at one time window of the video, as four frames tiled 2x2 into one picture.

The model names the window; the tool spreads four frames uniformly over it, tiles them row by row
and hands the picture to the model's next turn. Once per sample: a second call is refused with a
message the model can read, and counted. The grid is saved under its content hash and becomes
evidence that the verdict can cite; the frame times go into the text, never into the pixels.
"""

from __future__ import annotations

import hashlib
import io
import os
from typing import Annotated, Any

from pydantic import BaseModel, BeforeValidator, ConfigDict

from m3d_agents.safe_files import replace_file
from m3d_agents.errors import InputError
from m3d_agents.evidence import Evidence
from m3d_agents.tools.cards import Artifact, ToolCard, ToolContext

NAME = "clip_scout"
FRAMES = 4
DEFAULT_BUDGET = 1


def _seconds(value: Any) -> Any:
    from m3d_agents.media.video import parse_seconds as _parse_seconds  # the card is read without loading PyAV

    try:
        return _parse_seconds(value, "seconds") if isinstance(value, str) else value
    except InputError:
        return value


Seconds = Annotated[float, BeforeValidator(_seconds)]


class ClipScoutArgs(BaseModel):
    """A window in seconds; "MM:SS" is read too, since models write times that way."""

    model_config = ConfigDict(extra="forbid")

    start_s: Seconds
    end_s: Seconds


CARD = ToolCard(
    name=NAME, category="video", cost="cheap",
    purpose="Looks closely at one time window of the video: four frames spread over it, tiled 2x2 into one picture.",
    when_to_use="when one moment of the video decides the claim (a caption, a face, a place, a splice); once per post.",
    inputs="start_s and end_s, the window in seconds from the start of the video (numbers, or \"MM:SS\").",
    outputs="the picture, added to your next turn, and the four frame times; 'unavailable' when the post has no video file.",
)


def budget_message() -> str:
    return f"{NAME} budget used ({DEFAULT_BUDGET} per sample)"


def clip_scout(context: ToolContext, start_s: float, end_s: float) -> str:
    """Run ClipScout for the sample of ``context``; every outcome is text for the model, never an exception."""
    from m3d_agents.media.video import grid, sample_frames

    if not context.spend(NAME):
        return budget_message()
    video = context.prepared.video
    if video is None:
        context.stats[f"{NAME}.unavailable"] += 1
        return f"{NAME}: unavailable: no video file"
    try:
        frames = sample_frames(video.path, start_s, end_s, FRAMES, info=video)
    except InputError as exc:
        context.stats[f"{NAME}.errors"] += 1
        return f"{NAME}: error: {exc}"
    max_side = int(context.settings.get("grid_max_side", 1024))
    picture = grid([f.image for f in frames], rows=2, cols=2, max_side=max_side)
    buffer = io.BytesIO()
    picture.save(buffer, format="PNG")
    data = buffer.getvalue()
    sha = hashlib.sha256(data).hexdigest()
    path = None
    if context.artifacts_dir is not None:
        context.artifacts_dir.mkdir(parents=True, exist_ok=True)
        path = context.artifacts_dir / f"{sha}.png"
        if not os.path.lexists(path):
            replace_file(path, data)
    times = ", ".join(f"{f.time_s:.2f} s" for f in frames)
    caption = (
        f"{NAME}: frames of {start_s:g}-{end_s:g} s of the video at {times}, tiled 2x2 left to right, top to bottom"
    )
    evidence = Evidence(
        kind="video_frame", text=caption, title=f"frames {start_s:g}-{end_s:g} s",
        artifact=str(path) if path else f"{sha}.png", reason=f"{NAME} window asked for by the agent",
    )
    context.evidence.append(evidence)
    context.artifacts.append(Artifact(sha256=sha, image=picture, path=path, evidence_id=evidence.id, caption=caption))
    return f"{caption} [{evidence.id}]."
