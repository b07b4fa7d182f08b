"""``m3d debate``: run one debate configuration on a post, streaming each turn as it happens."""

from __future__ import annotations

from debates.cli.one_post import one_post_command

debate = one_post_command(
    "async", streams=True,
    summary="Run a configuration on one post; the turns stream live, then the verdict, its evidence and the tool findings.",
)
