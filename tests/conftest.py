from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import settings

# Wall-clock deadlines make property tests flaky on busy shared machines; behaviour is what we test.
settings.register_profile("m3d", deadline=None)
settings.load_profile("m3d")


@pytest.fixture(autouse=True)
def isolated_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Keep every response cache and config lookup of a test inside its own temporary folder."""
    monkeypatch.setenv("M3D_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("M3D_BACKEND", raising=False)
    monkeypatch.delenv("M3D_CONFIG", raising=False)
    monkeypatch.chdir(tmp_path)
