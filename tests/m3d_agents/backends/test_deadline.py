"""A hung model server cannot hold a call past the backend's total deadline, whatever its retries allow."""

from __future__ import annotations

import pytest
from autogen_core.models import UserMessage

from m3d_agents.backends.config import BackendConfig, BackendSettings
from m3d_agents.backends.factory import BackendPool
from m3d_agents.backends.metering import UsageLedger
from m3d_agents.errors import BackendError
from tests.support.fault_server import FaultServer


async def test_a_hung_local_server_is_given_up_on_at_the_deadline(monkeypatch: pytest.MonkeyPatch) -> None:
    with FaultServer(rate=1.0, faults=("hang",), hang_s=5.0) as server:
        monkeypatch.setenv("M3D_LOCAL_BASE_URL", server.base_url)
        # 21 attempts of 1 s each would hold the call for over 20 s without the deadline.
        config = BackendConfig(kind="local", timeout_s=1.0, transport_retries=20, deadline_s=2.0, cache=False)
        pool = BackendPool(BackendSettings(backends={"local": config}))
        try:
            client = pool.get("local").view(UsageLedger(), agent="checker", role="checker")
            with pytest.raises(BackendError, match="within its deadline of 2 s"):
                await client.create([UserMessage(content="Is this post true?", source="user")])
        finally:
            await pool.close()
        assert 1 <= server.stats["requests"] <= 3


def test_the_embedded_backend_has_a_deadline_of_a_few_minutes(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("M3D_LOCAL_BASE_URL", raising=False)
    local = BackendSettings().get("local")
    assert local.call_deadline_s() == 300.0
    assert local.call_deadline_s(starts_server=True) == 300.0 + local.local.startup_timeout_s
    monkeypatch.setenv("M3D_LOCAL_BASE_URL", "http://127.0.0.1:9/v1")
    assert local.call_deadline_s(starts_server=True) == 300.0, "no start-up time for a server that is already running"
    assert BackendSettings().get("openai").call_deadline_s() == 300.0
