"""Front ends and workers as real processes sharing a real Redis, with real faults: a worker
killed with SIGKILL in the middle of 200 runs, Redis restarted mid-run, every process
restarted while an approval waits. Each side effect is counted by the tool itself in a file
(`_cluster_tools`), so a side effect done twice cannot hide."""

from __future__ import annotations

import asyncio
import collections
import itertools
import uuid
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests._local import RedisProcess
from tests._waiting import until
from tests.server._procs import ServerProcess, WorkerProcess
from tests.server._sse import Stream, read_sse

pytestmark = pytest.mark.external  # `kosong serve` and `kosong worker` processes, a redis-server

TOOLS = str(Path(__file__).parent / "_cluster_tools.py") + ":tools"
FINAL = ("tool_result", "tool_error")


def _database(redis_url: str, number: int) -> str:
    """The Redis database `number` of the session's server: a queue of each test's own (a
    worker of another test, serving other tools, must not take its runs)."""
    return redis_url.rpartition("/")[0] + f"/{number}"


class Cluster:
    """Front ends (`kosong serve --workers 0`) and workers (`kosong worker`) on one Redis."""

    def __init__(self, redis_url: str, effects: Path, fronts: int, workers: int) -> None:
        self.redis_url = redis_url
        self.effects = effects
        self.env = {"KOSONG_TEST_EFFECTS": str(effects)}
        self.fronts: list[ServerProcess] = []
        self.workers: list[WorkerProcess] = []
        for _ in range(fronts):
            self.add_front()
        for _ in range(workers):
            self.add_worker()

    def add_front(self) -> ServerProcess:
        front = ServerProcess("--redis", self.redis_url, "--workers", "0", "--lease", "1",
                              "--rate-limit", "off", target=TOOLS, env=self.env)  # fmt: skip
        self.fronts.append(front)
        return front

    def add_worker(self) -> WorkerProcess:
        worker = WorkerProcess("--redis", self.redis_url, "--lease", "1", "--concurrency", "100",
                               "--grace", "1", target=TOOLS, env=self.env)  # fmt: skip
        self.workers.append(worker)
        return worker

    def close(self) -> str:
        logs = ""
        for proc in [*self.fronts, *self.workers]:
            if proc.proc.poll() is None:
                logs += proc.terminate()
        return logs

    def effects_of(self, pid: int) -> collections.Counter[str]:
        """How many side effects of each kind the process `pid` did."""
        if not self.effects.exists():
            return collections.Counter()
        lines = [line.split() for line in self.effects.read_text().splitlines()]
        return collections.Counter(words[0] for words in lines if words[-1] == str(pid))

    def counted(self, kind: str) -> collections.Counter[str]:
        """How many times each side effect of `kind` happened."""
        if not self.effects.exists():
            return collections.Counter()
        lines = self.effects.read_text().splitlines()
        return collections.Counter(line.split()[1] for line in lines if line.split()[0] == kind)


async def _follow_to_the_end(
    c: httpx.AsyncClient,
    fronts: list[ServerProcess],
    tool: str,
    body: dict[str, Any],
    key: str,
    cut: list[str] | None = None,
) -> tuple[Stream, list[Stream]]:
    """Call with an idempotency key, and follow until the final event, whatever happens:
    a stream cut (resumed with Last-Event-ID on another front end), a 503 while Redis is
    away (the same call again, with the same key, on the next front end). The first stream,
    and all the streams read; each stream cut before its final event is added to `cut`."""
    streams: list[Stream] = []
    events: list[Any] = []
    run_path: str | None = None

    async def attempt() -> tuple[Stream, list[Stream]] | None:
        nonlocal events, run_path
        front = fronts[len(streams) % len(fronts)]
        try:
            if run_path is None or not events:
                stream = await read_sse(c, "POST", f"{front.url}/tools/{tool}/sse", json=body,
                                        headers={"Idempotency-Key": key})  # fmt: skip
                if stream.status == 200:
                    run_path = stream.headers["content-location"]
                    events = []  # followed from the start: the whole log again
            else:
                stream = await read_sse(c, "GET", f"{front.url}{run_path}",
                                        last_event_id=events[-1][1])  # fmt: skip
        except httpx.TransportError:
            stream = Stream(0, httpx.Headers())
        streams.append(stream)
        if stream.status == 200:
            events += stream.events
            if events and events[-1][0] in FINAL:
                return Stream(200, stream.headers, events), streams
        if cut is not None:
            cut.append(key)
        return None

    return await until(attempt, f"the run of {key} followed to its end", within=120, every=0.1)


async def test_a_worker_killed_in_the_middle_of_200_runs_loses_none_and_repeats_no_side_effect(
    redis_url: str, tmp_path: Path
) -> None:
    cluster = Cluster(_database(redis_url, 1), tmp_path / "effects.log", fronts=2, workers=3)
    runs = [("charge" if i % 2 else "store", f"x{i}") for i in range(200)]
    try:
        async with httpx.AsyncClient(timeout=60) as c:

            async def one(i: int, tool: str, name: str) -> tuple[Stream, list[Stream]]:
                body = {"order" if tool == "charge" else "item": name, "delay": 1.0}
                fronts = cluster.fronts[i % 2 :] + cluster.fronts[: i % 2]
                return await _follow_to_the_end(c, fronts, tool, body, f"key-{name}")

            calls = [
                asyncio.ensure_future(one(i, tool, name)) for i, (tool, name) in enumerate(runs)
            ]
            victim = cluster.workers[0]

            def in_the_middle() -> bool:
                done = cluster.effects_of(victim.proc.pid)
                return done["charge"] >= 3 and done["store"] >= 3

            await until(in_the_middle, "the worker to be in the middle of runs of both tools")
            victim.kill()  # SIGKILL: its runs are left mid-call
            finished = await asyncio.wait_for(asyncio.gather(*calls), 90)

            # The same keys again, on the other front end: the same runs, run no more.
            again = await asyncio.gather(
                *(
                    c.post(
                        f"{cluster.fronts[1].url}/tools/{tool}",
                        json={"order" if tool == "charge" else "item": name, "delay": 1.0},
                        headers={"Idempotency-Key": f"key-{name}"},
                    )
                    for tool, name in runs[:40]
                )
            )
            # Every run's log, read whole from the other front end: the same log.
            replayed = await asyncio.gather(
                *(
                    read_sse(c, "GET", f"{cluster.fronts[1].url}{s.headers['content-location']}")
                    for s, _ in finished
                )
            )
    finally:
        logs = cluster.close()
    charged = cluster.counted("charge")
    assert max(charged.values()) == 1, [k for k, n in charged.items() if n > 1]  # never twice
    retried = uncertain = 0
    for (tool, name), (whole, _), log in zip(runs, finished, replayed, strict=True):
        kinds = whole.kinds
        assert sum(kind in FINAL for kind in kinds) == 1 and kinds[-1] in FINAL, kinds
        if whole.final["success"]:  # its progress, reported on a worker, read on a front end
            assert "tool_progress" in kinds
        assert log.events == whole.events  # one log, the same from anywhere
        final = whole.final
        if "tool_retrying" in kinds:
            retried += 1
            assert tool == "store" and final["data"] == f"stored {name}", final
        elif final["success"]:
            assert final["data"] in (f"charged {name}", f"stored {name}")
        else:  # a side effect that may or may not have happened: said, and not repeated
            uncertain += 1
            error = final["error"]
            assert tool == "charge" and error["code"] == "NETWORK_ERROR", final
            assert "may or may not have taken effect" in error["message"]
            assert error["retryable"] is False and charged[name] <= 1
    assert retried > 0 and uncertain > 0, (retried, uncertain)  # it had runs of both kinds
    for response, (whole, _) in zip(again, finished[:40], strict=True):
        assert response.status_code in (200, 503), response.text  # 503: the uncertain ones
        assert (
            response.json()["metadata"]["tool_call_id"] == whole.final["metadata"]["tool_call_id"]
        )  # the same run's result
    assert max(cluster.counted("charge").values()) == 1
    assert "Traceback" not in logs, logs[-3000:]


async def test_redis_restarted_mid_run_recovers_and_repeats_no_side_effect(
    tmp_path: Path,
) -> None:
    redis = RedisProcess(durable=True)
    cluster = Cluster(redis.url, tmp_path / "effects.log", fronts=2, workers=2)
    runs = [("charge" if i % 2 else "store", f"r{i}") for i in range(40)]
    cut: list[str] = []
    try:
        async with httpx.AsyncClient(timeout=60) as c:

            async def one(i: int, tool: str, name: str) -> tuple[Stream, list[Stream]]:
                # Long enough halves that runs are still going when Redis stops.
                body = {"order" if tool == "charge" else "item": name, "delay": 2.0}
                fronts = cluster.fronts[i % 2 :] + cluster.fronts[: i % 2]
                return await _follow_to_the_end(c, fronts, tool, body, f"key-{name}", cut)

            calls = [
                asyncio.ensure_future(one(i, tool, name)) for i, (tool, name) in enumerate(runs)
            ]
            # Mid-run: tools have done their side effect, and their runs have not ended.
            await until(lambda: cluster.counted("charge") and cluster.counted("store"),
                        "runs of both tools to be in the middle")  # fmt: skip
            redis.stop()
            down = await c.post(f"{cluster.fronts[0].url}/tools/charge", json={"order": "z"})
            await until(lambda: cut, "a stream to be cut by the outage")
            redis.start()
            finished = await asyncio.wait_for(asyncio.gather(*calls), 120)
    finally:
        logs = cluster.close()
        redis.close()
    # While Redis was away, calls failed with the catalog's error (503, NETWORK_ERROR)...
    assert down.status_code == 503 and down.json()["error"]["code"] == "NETWORK_ERROR"
    assert int(down.headers["Retry-After"]) >= 1
    # ...and each came to its end, with one final event, and no side effect done twice.
    for (tool, _name), (whole, _) in zip(runs, finished, strict=True):
        assert sum(kind in FINAL for kind in whole.kinds) == 1, whole.kinds
        final = whole.final
        if not final["success"]:
            assert tool == "charge" and "may or may not" in final["error"]["message"], final
    assert max(cluster.counted("charge").values()) == 1
    assert any(len(streams) > 1 for _, streams in finished)  # cut streams were resumed
    assert "Traceback" not in logs, logs[-3000:]


async def test_an_approval_waits_while_every_process_restarts_and_is_answered_elsewhere(
    redis_url: str, tmp_path: Path
) -> None:
    cluster = Cluster(_database(redis_url, 2), tmp_path / "effects.log", fronts=1, workers=1)
    path = f"/tmp/{uuid.uuid4().hex}"
    try:
        async with httpx.AsyncClient(timeout=30) as c:
            first = await read_sse(c, "POST", f"{cluster.fronts[0].url}/tools/delete/sse",
                                   json={"path": path}, stop_after=0)  # fmt: skip
            run_path = first.headers["content-location"]
            run_id = run_path.removeprefix("/runs/")

            async def waiting_runs() -> list[Any]:
                found = await c.get(f"{cluster.fronts[0].url}/runs?state=waiting")
                return [r for r in found.json()["runs"] if r["id"] == run_id]

            waiting = await until(waiting_runs, "the run to be listed as waiting")
            assert waiting[0]["tool"] == "delete"
            assert waiting[0]["arguments"] == {"path": path}
            assert waiting[0]["question"] == f"may I delete {{'path': '{path}'}}?"

            for proc in [*cluster.fronts, *cluster.workers]:  # every process, killed
                proc.kill()
            cluster.fronts.clear()
            cluster.workers.clear()
            front_a, front_b = cluster.add_front(), cluster.add_front()
            cluster.add_worker()

            listed = await c.get(f"{front_b.url}/runs?state=waiting")
            assert [r["id"] for r in listed.json()["runs"]] == [run_id]
            assert listed.json()["runs"][0]["since"] == waiting[0]["since"]
            answered = await c.post(f"{front_b.url}/runs/{run_id}/input",
                                    json={"approved": True, "reason": "yes"})  # fmt: skip
            again = await c.post(f"{front_b.url}/runs/{run_id}/input", json={"approved": False})
            rest = await read_sse(c, "GET", f"{front_a.url}{run_path}")
            left = await c.get(f"{front_a.url}/runs?state=waiting")
    finally:
        logs = cluster.close()
    assert answered.status_code == 202 and answered.json()["status"] == "answered"
    assert again.status_code == 409
    assert rest.final["success"] and rest.final["data"] == f"deleted {path}"
    assert cluster.counted("delete") == {path: 1}
    assert left.json() == {"runs": []}
    assert "Traceback" not in logs, logs[-3000:]


async def test_a_stopped_worker_leaves_its_runs_to_another(redis_url: str, tmp_path: Path) -> None:
    cluster = Cluster(_database(redis_url, 5), tmp_path / "effects.log", fronts=1, workers=1)
    try:
        async with httpx.AsyncClient(timeout=30) as c:
            front = cluster.fronts[0].url
            started = [
                await read_sse(
                    c,
                    "POST",
                    f"{front}/tools/{tool}/sse",
                    json={key: "s1", "delay": 1.5},
                    stop_after=1,
                )
                for tool, key in (("store", "item"), ("charge", "order"))
            ]
            log = await asyncio.to_thread(cluster.workers[0].terminate)  # grace: 1 s, too short
            cluster.add_worker()
            rest = [
                await read_sse(
                    c, "GET", f"{front}{s.headers['content-location']}", last_event_id=s.last_id
                )
                for s in started
            ]
    finally:
        cluster.close()
    stored, charged = rest
    assert "tool_retrying" in stored.kinds and stored.final["data"] == "stored s1"
    assert "may or may not" in charged.final["error"]["message"]
    assert cluster.counted("charge")["s1"] <= 1
    assert "Traceback" not in log, log


async def test_a_sequential_tool_runs_one_call_at_a_time_across_workers(
    redis_url: str, tmp_path: Path
) -> None:
    cluster = Cluster(_database(redis_url, 3), tmp_path / "effects.log", fronts=1, workers=2)
    try:
        async with httpx.AsyncClient(timeout=30) as c:
            answers = await asyncio.gather(
                *(
                    c.post(
                        f"{cluster.fronts[0].url}/tools/one_at_a_time",
                        json={"tag": f"t{i}", "delay": 0.15},
                    )
                    for i in range(6)
                )
            )
    finally:
        cluster.close()
    assert [a.status_code for a in answers] == [200] * 6
    lines = [line.split() for line in cluster.effects.read_text().splitlines()]
    spans = sorted(
        (float(start[2]), float(end[2]))
        for start in lines
        for end in lines
        if start[0] == "start" and end[0] == "end" and start[1] == end[1]
    )
    assert len(spans) == 6
    for (_, ended), (started, _) in itertools.pairwise(spans):
        assert started >= ended  # never two at once
    assert len({line[3] for line in lines}) == 2  # both workers ran some


async def test_a_full_queue_answers_429_with_retry_after(redis_url: str, tmp_path: Path) -> None:
    effects = tmp_path / "effects.log"
    redis_url = _database(redis_url, 4)
    front = ServerProcess("--redis", redis_url, "--workers", "0", "--max-queued", "3",
                          "--rate-limit", "off", target=TOOLS,
                          env={"KOSONG_TEST_EFFECTS": str(effects)})  # fmt: skip
    worker: WorkerProcess | None = None
    prefix = uuid.uuid4().hex[:8]
    try:
        async with httpx.AsyncClient(timeout=30) as c:
            queued = [
                await read_sse(
                    c,
                    "POST",
                    f"{front.url}/tools/store/sse",
                    json={"item": f"{prefix}{i}", "delay": 0},
                    stop_after=0,
                )
                for i in range(3)
            ]
            full = await c.post(f"{front.url}/tools/store/sse",
                                json={"item": "one too many", "delay": 0})  # fmt: skip
            worker = WorkerProcess("--redis", redis_url, "--lease", "1", target=TOOLS,
                                   env={"KOSONG_TEST_EFFECTS": str(effects)})  # fmt: skip
            done = [
                await read_sse(c, "GET", f"{front.url}{s.headers['content-location']}")
                for s in queued
            ]
            after = await c.post(f"{front.url}/tools/store", json={"item": "now", "delay": 0})
    finally:
        front.terminate()
        if worker is not None:
            worker.terminate()
    assert [s.status for s in queued] == [200] * 3
    assert full.status_code == 429 and int(full.headers["Retry-After"]) >= 1
    assert full.json()["error"]["code"] == "RATE_LIMITED"
    assert all(s.final["success"] for s in done)
    assert after.status_code == 200


@pytest.mark.parametrize("args", [["--workers", "0"], ["--max-queued", "5"]])
def test_serve_refuses_queue_flags_without_redis(args: list[str]) -> None:
    with pytest.raises(RuntimeError, match="did not start"):
        ServerProcess(*args, target=TOOLS)
