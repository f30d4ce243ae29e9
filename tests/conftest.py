"""What every part of the suite shares: a real redis-server started once per session, and the
`external` marker on the tests that start processes outside pytest's own.

`python3 run.py test -m "not external"` is the quick loop: the tests that run in this process.
A test is `external` when it starts a program beside pytest: redis-server (the `redis_url`
fixture, marked here, or a RedisProcess), `kosong serve` / `worker` / `mcp` processes, MCP
stdio servers, Node or npx, Chromium. The modules that do so say `pytestmark =
pytest.mark.external` (or mark the tests that do); this hook marks every test using a fixture
of EXTERNAL_FIXTURES, wherever it is.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests._local import RedisProcess

# Fixtures that start a process: a test that uses one (directly or through another) is external.
EXTERNAL_FIXTURES = frozenset({"redis_url", "kosong_mcp"})


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if EXTERNAL_FIXTURES.intersection(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.external)


@pytest.fixture(scope="session")
def redis_url() -> Iterator[str]:
    """A redis-server of our own on a free loopback port, stopped after the session."""
    redis = RedisProcess()
    try:
        yield redis.url
    finally:
        redis.close()
