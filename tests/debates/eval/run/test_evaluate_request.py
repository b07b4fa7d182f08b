"""An evaluation's options are checked before anything runs: one line naming the first bad one."""

from __future__ import annotations

import pytest

from debates.eval.run.evaluate import EvaluateRequest, check_request
from m3d_agents.errors import InputError


@pytest.mark.parametrize("seed", [-1, 2**31])
def test_a_run_seed_out_of_range_is_one_line(seed: int) -> None:
    with pytest.raises(InputError) as caught:
        check_request(EvaluateRequest(config="check", dataset="mediaeval:/nowhere", seed=seed))
    assert caught.value.field == "seed"
