"""Where the repository, its example post and the shared public data sets are."""

from __future__ import annotations

from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
SHARED_DATA = (REPO.parent / "shared" / "data").resolve()
EXAMPLE_IMAGE = REPO / "examples" / "sandy_fake_29.jpg"


def shared_data(*parts: str) -> Path:
    """A path under ../shared/data, skipping the test when a user's clone does not have it."""
    import pytest  # here, so scripts that only need the paths run where pytest is not installed

    path = SHARED_DATA.joinpath(*parts)
    if not path.exists():
        pytest.skip(f"needs the shared data set at {path} (present in CI, not in a plain clone)")
    return path
