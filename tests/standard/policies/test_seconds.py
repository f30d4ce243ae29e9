"""Every duration a policy is configured with is checked the same way: positive and finite."""

from __future__ import annotations

import math
from collections.abc import Callable

import pytest

from kosong.standard.policies import (
    ApprovalDecision,
    ApprovalPolicy,
    CachePolicy,
    RepeatGuardPolicy,
    RetryPolicy,
    TimeoutPolicy,
)


async def _approve(call: object) -> ApprovalDecision:
    return ApprovalDecision.approve()


DURATIONS: dict[str, Callable[[float], object]] = {
    "ask_timeout": lambda s: ApprovalPolicy(_approve, ask_timeout=s),
    "default_ttl": lambda s: CachePolicy(default_ttl=s),
    "window": lambda s: RepeatGuardPolicy(window=s),
    "deadline": lambda s: RetryPolicy(deadline=s),
    "seconds": lambda s: TimeoutPolicy(seconds=s),
    "grace": lambda s: TimeoutPolicy(grace=s),
}


@pytest.mark.parametrize("name", DURATIONS)
@pytest.mark.parametrize("bad", [0.0, -1.0, math.nan, math.inf, -math.inf])
def test_a_duration_that_is_not_a_positive_finite_number_is_refused_by_name(
    name: str, bad: float
) -> None:
    with pytest.raises(ValueError, match=rf"^{name}\b.* must be a positive number of seconds"):
        DURATIONS[name](bad)


@pytest.mark.parametrize("name", DURATIONS)
def test_a_positive_duration_is_taken(name: str) -> None:
    DURATIONS[name](0.5)
