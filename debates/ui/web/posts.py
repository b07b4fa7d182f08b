"""The post a person submits: written text with an optional image upload, or a sample of a served data set.

An upload is read up to the server's limit, saved under a random name in the server's upload
folder, and then goes through exactly the checks the CLI applies to ``--image``
(:func:`m3d_agents.media.images.load_image`: size, format, pixel bomb, truncation). Messages name
the file as the person called it, never the server's path.
"""

from __future__ import annotations

import asyncio
import os
import re
import secrets
from dataclasses import dataclass, field
from pathlib import Path

from starlette.datastructures import FormData, UploadFile

from debates.ui.web.errors import PageError
from debates.ui.web.forms import text_field
from debates.ui.web.settings import WebSettings
from m3d_agents.errors import InputError
from m3d_agents.labels import TAXONOMIES
from m3d_agents.media.images import load_image, prepare_sample
from m3d_agents.safe_files import OwnedFolder
from m3d_agents.sample import Sample

_SUFFIX = re.compile(r"^\.[a-z0-9]{1,5}$")
_SHOWN_NAME = re.compile(r"[^A-Za-z0-9 ._()-]")
CHUNK = 64 * 1024


@dataclass
class Post:
    sample: Sample
    uploads: list[Path] = field(default_factory=list)
    """Files this server saved for the post; deleted when its debate is over."""

    def discard(self) -> None:
        discard(self.uploads)


def discard(paths: list[Path]) -> None:
    for path in paths:
        path.unlink(missing_ok=True)


def dataset_sample(settings: WebSettings, choice: str) -> Sample:
    """A sample named ``<data set>::<sample id>``."""
    name, sep, sample_id = choice.partition("::")
    samples = settings.datasets.get(name)
    if not sep or samples is None:
        raise PageError(400, "post: no such data set on this server")
    for sample in samples:
        if sample.id == sample_id:
            return sample
    raise PageError(400, f"post: the data set has no sample {sample_id!r}")


async def save_upload(settings: WebSettings, upload: UploadFile) -> tuple[Path, str]:
    """Store an upload under a random name, refusing it once it passes the size limit."""
    shown = _SHOWN_NAME.sub("_", Path(upload.filename or "upload").name)[:80] or "upload"
    suffix = Path(shown).suffix.lower()
    target = settings.upload_dir / f"{secrets.token_hex(12)}{suffix if _SUFFIX.match(suffix) else '.img'}"
    size = 0
    try:
        fd = OwnedFolder(settings.upload_dir).open(target.name, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "wb") as out:
            while chunk := await upload.read(CHUNK):
                size += len(chunk)
                if size > settings.max_upload_bytes:
                    raise PageError(413, f"The upload {shown} is over {settings.max_upload_bytes / 1e6:.1f} MB, the most "
                                         "this server accepts. Choose a smaller image.")
                out.write(chunk)
    except BaseException:
        target.unlink(missing_ok=True)
        raise
    return target, shown


async def post_from_form(settings: WebSettings, form: FormData) -> Post:
    """The post of the live debate form, checked as the CLI checks ``--text`` and ``--image``."""
    choice = text_field(form, "dataset_sample", max_chars=600)
    if choice:
        return Post(dataset_sample(settings, choice))
    text = text_field(form, "text", max_chars=settings.limits.max_text_chars, label="text")
    taxonomy = text_field(form, "taxonomy", max_chars=40) or "binary"
    if taxonomy not in TAXONOMIES:
        raise PageError(400, f"taxonomy: {taxonomy!r} is not one of {', '.join(TAXONOMIES)}")
    if not text:
        raise PageError(400, "text: write the post's caption or claim (or pick a sample of a data set)")
    upload = form.get("image")
    uploads: list[Path] = []
    try:
        if isinstance(upload, UploadFile) and (upload.filename or upload.size):
            path, shown = await save_upload(settings, upload)
            uploads.append(path)
            try:
                await asyncio.to_thread(load_image, path, settings.limits, "image")
            except InputError as exc:
                raise PageError(400, f"image {shown}: {exc.problem.replace(str(path), shown)}") from None
        sample = Sample(text=text, images=uploads, taxonomy=taxonomy)
        await asyncio.to_thread(prepare_sample, sample, settings.limits)
    except (InputError, ValueError) as exc:
        discard(uploads)
        raise PageError(400, str(exc).replace(str(settings.upload_dir), "upload")) from None
    except BaseException:
        discard(uploads)
        raise
    return Post(sample, uploads)
