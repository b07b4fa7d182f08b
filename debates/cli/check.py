"""``m3d check``: check one post with one configuration (the single checker by default) and print its verdict."""

from __future__ import annotations

from debates.cli.one_post import one_post_command

check = one_post_command(
    "check", streams=False,
    summary="Check one post and print the verdict, where its evidence came from and what the tools found.",
)
