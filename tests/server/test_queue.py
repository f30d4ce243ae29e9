"""The run queue on a real redis-server: an outage is the store's error, not Redis's."""

from __future__ import annotations

import pytest

from kosong.eventstore import StoreUnavailableError
from kosong.server._queue import RunQueue
from tests._local import RedisProcess

pytestmark = pytest.mark.external  # a redis-server started and stopped for real


async def test_submit_while_redis_is_down_raises_store_unavailable_after_one_retry() -> None:
    redis = RedisProcess()
    queue = RunQueue(redis.url, lambda tool: None)
    try:
        await queue.open()
        await queue.submit("run-1", "echo")  # reachable: queued
        redis.stop()
        with pytest.raises(StoreUnavailableError, match="queue's Redis cannot be reached"):
            await queue.submit("run-2", "echo", again=True)
    finally:
        redis.close()
        await queue.aclose()
