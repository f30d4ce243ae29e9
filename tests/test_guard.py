"""Foreign code's failure as a value: `call_guarded` and `await_guarded`."""

from __future__ import annotations

import asyncio

import pytest

from kosong._guard import Failed, await_guarded, call_guarded


def fails(text: str) -> str:
    raise LookupError(text)


async def fails_later(text: str) -> str:
    await asyncio.sleep(0)
    raise LookupError(text)


async def upper_later(text: str) -> str:
    await asyncio.sleep(0)
    return text.upper()


def test_call_guarded_gives_the_value_or_what_was_raised() -> None:
    assert call_guarded(str.upper, "a") == "A"
    failed = call_guarded(fails, "gone")
    assert isinstance(failed, Failed)
    assert isinstance(failed.error, LookupError) and str(failed.error) == "gone"


async def test_await_guarded_takes_sync_and_async_hooks_and_their_failures() -> None:
    assert await await_guarded(str.upper, "a") == "A"
    assert await await_guarded(upper_later, "a") == "A"
    for hook in (fails, fails_later):
        failed = await await_guarded(hook, "gone")
        assert isinstance(failed, Failed) and str(failed.error) == "gone"


async def test_await_guarded_lets_the_callers_cancellation_through() -> None:
    started = asyncio.Event()

    async def waits() -> None:
        started.set()
        await asyncio.Event().wait()

    task = asyncio.create_task(await_guarded(waits))
    await asyncio.wait_for(started.wait(), 5)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task


def test_call_guarded_lets_keyboard_interrupt_through() -> None:
    def interrupted() -> None:
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        call_guarded(interrupted)
