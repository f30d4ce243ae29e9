"""The server benchmark: kosong's app beside the anchors of ../shared/anchor-bench/server/.

    $PY benchmarks/bench_server.py rr      # POST /tools/add beside the Starlette floor
    $PY benchmarks/bench_server.py sse     # 1,000 SSE runs beside sse-starlette's
    $PY benchmarks/bench_server.py latency # one kept-alive httpx connection, floor and ours
    $PY benchmarks/bench_server.py kill    # 200 runs, one of 2 processes killed
    $PY benchmarks/bench_server.py all --out /tmp/bench-server.json

($PY: /tmp/srvbench-kosong/bin/python, the venv BENCHMARKS.md says how to make.)

The venv (see BENCHMARKS.md) has the anchor's pinned stack (starlette, uvicorn, sse-starlette,
psutil: its constraints file) and kosong installed from this checkout, so the anchor's apps and
ours run on the same interpreter and libraries in one run. The anchors' apps run as the anchors
run them (`uvicorn --factory`, asyncio loop, h11); ours runs as users start it, `kosong serve
benchmarks/server_apps.py:tools` (uvicorn's automatic choice, which is asyncio and h11 in this
venv: neither uvloop nor httptools is installed; the run says so), with its defaults but for the
options named below. Every server is one process pinned to CPU 0 (SERVER_CPU), the load on CPU
1 (CLIENT_CPU), every client keeps its connections alive; repeats are the outer loop, a fresh
server each time; medians.

rr    wrk -t1 -cC (c = 1, 16, 64) through the anchor's own `run_wrk` (2 s warm-up, 5 s measured,
      every body checked by floor.lua, server CPU from psutil): the anchor's Starlette floor
      (apps:floor) and our POST /tools/add (`kosong serve --rate-limit <never reached>`), which
      goes through the checks (Host/Origin, cross-site, token, rate limiter, body size), the
      pipeline (metrics) and the envelope.
sse   N streams at once from 2 client processes (raw asyncio HTTP, the anchor's WHATWG SSE
      parser), 10 progress events 10 ms apart + the result: the anchor's apps:sse with its own
      client (`sse_bench.one_run`), then ours on POST /tools/progress/sse, then ours again with
      every client dropping its connection after a random number of events (1..10) and
      resuming with Last-Event-ID on GET /runs/{id}. Each of our streams must get the 11 events
      exactly once, in order. Event latency = receive time - the time in the progress message.
latency  one httpx client, one kept-alive connection, 2,000 POST /tools/add one after the
      other (200 first, unmeasured): each answer's time, floor and ours. A server whose
      accepted sockets lack TCP_NODELAY answers each in about 40 ms (Nagle's algorithm meets
      the client's delayed ACK); wrk, which writes each request whole, may not show it.
kill  a redis-server, two `kosong serve --redis URL --lease 2 --rate-limit off` processes
      sharing it (each a front end and a worker of the queue); RUNS streams (half on each) of
      10 events 200 ms apart; process A is SIGKILLed mid-run, A's clients resume on B with
      Last-Event-ID. Every run's events, as received, are compared with what Redis holds for
      it: none lost, none twice; the runs A was executing end with a NETWORK_ERROR saying they
      may or may not have taken effect (the tool is not marked safe to repeat), the others
      with their result.
queue what handing runs to workers costs, on a redis-server of its own: `progress` streamed
      (one progress event, then the result, SSE_INTERVAL_MS=0), one run after the other, RUNS
      times: time to first event (p50) and the CPU all the server processes spent per run
      (from /proc), for a run executed in the process that took it (no Redis), queued and
      executed by the front end's own worker slots (`--redis`), and by one `kosong worker`
      beside a front end only (`--workers 0`); then runs per second, POST /tools/add from 64
      concurrent clients (RUNS x 5 calls), with one and with two `kosong worker` processes.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib
import importlib.util
import json
import os
import random
import re
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ANCHOR = Path(
    os.environ.get("ANCHOR_DIR", HERE.parent.parent / "shared" / "anchor-bench" / "server")
)
SERVER_CPU = os.environ.get("SERVER_CPU", "0")
CLIENT_CPU = os.environ.get("CLIENT_CPU", "1")
LOG_DIR = Path(os.environ.get("SRVBENCH_LOG_DIR", "/tmp/srvbench-logs"))
PY = sys.executable
sys.path.insert(0, str(ANCHOR))


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Server:
    """A server process pinned to SERVER_CPU on a free port: `argv(port)` starts it."""

    def __init__(
        self,
        argv: Any,
        tag: str,
        env: dict[str, str] | None = None,
        cpu: str = SERVER_CPU,
        cwd: Path = HERE,
    ) -> None:
        self.port = free_port()
        LOG_DIR.mkdir(parents=True, exist_ok=True)
        self.log = open(LOG_DIR / f"{tag}.log", "w")  # noqa: SIM115
        cmd = ["taskset", "-c", cpu, *argv(self.port)]
        self.proc = subprocess.Popen(
            cmd,
            cwd=cwd,
            stdout=self.log,
            stderr=subprocess.STDOUT,
            env={**os.environ, **(env or {})},
        )
        self.url = f"http://127.0.0.1:{self.port}"
        deadline = time.time() + 30
        while True:
            if self.proc.poll() is not None:
                raise RuntimeError(f"server died: {cmd}, see {self.log.name}")
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=0.2).close()
                break
            except OSError:
                if time.time() > deadline:
                    self.stop()
                    raise RuntimeError("server did not start") from None
                time.sleep(0.1)
        time.sleep(0.3)

    @property
    def pid(self) -> int:
        return self.proc.pid

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.log.close()


def uvicorn(factory: str) -> Any:
    """An anchor's app as the anchors run it: `uvicorn --factory` (asyncio, h11), no access log."""

    def argv(port: int) -> list[str]:
        return [
            PY, "-m", "uvicorn", "--factory", factory, "--app-dir", str(ANCHOR),
            "--host", "127.0.0.1", "--port", str(port), "--loop", "asyncio", "--http", "h11",
            "--log-level", "warning", "--no-access-log",
        ]  # fmt: skip

    return argv


UNREACHED = "1000000000/s,burst=1000000000"
"""A rate limit never reached: the limiter's cost is in the figures, its refusals are not."""


def kosong_serve(*options: str) -> Any:
    """Our server as users start it: `kosong serve benchmarks/server_apps.py:tools`, defaults
    but for the options given (the inspector at /, /mcp when the SDK is installed)."""

    def argv(port: int) -> list[str]:
        return [
            PY, "-m", "kosong", "serve", f"{HERE / 'server_apps.py'}:tools",
            "--host", "127.0.0.1", "--port", str(port), "--log-level", "warning", *options,
        ]  # fmt: skip

    return argv


def event_loop_note() -> str:
    """What uvicorn's "auto" picks under `kosong serve` in this venv (the floor: asyncio, h11)."""
    found = [m for m in ("uvloop", "httptools") if importlib.util.find_spec(m) is not None]
    if found:
        return f"note: {' and '.join(found)} installed: kosong serve uses them, the floor does not"
    return "kosong serve runs uvicorn's auto choice: asyncio and h11 here, as the floor does"


# --------------------------------------------------------------------------------------- rr


RR = {
    "floor/wrk": (uvicorn("apps:floor"), "/tools/add"),
    "kosong/wrk": (kosong_serve("--rate-limit", UNREACHED), "/tools/add"),
    "floor_thread/wrk": (uvicorn("apps:floor_thread"), "/tools/add"),
    "kosong-sync/wrk": (kosong_serve("--rate-limit", UNREACHED), "/tools/add_sync"),
}
"""Scenario -> (server, path). An async tool is compared with the Starlette floor; a plain
`def` tool (run in a worker thread) with `floor_thread`, the same plain function run in a
worker thread as Starlette runs a sync endpoint."""
FLOOR_OF = {"kosong/wrk": "floor/wrk", "kosong-sync/wrk": "floor_thread/wrk"}


def bench_rr(repeats: int, concurrencies: list[int]) -> dict[str, Any]:
    run_bench = importlib.import_module("run_bench")  # the anchor's wrk driver and measurement

    samples: dict[str, dict[str, list[dict[str, Any]]]] = {
        name: {str(c): [] for c in concurrencies} for name in RR
    }
    print(event_loop_note(), flush=True)
    for rep in range(repeats):
        for name, (argv, path) in RR.items():
            srv = Server(argv, f"rr-{name.replace('/', '_')}-r{rep}")
            srv.url += path
            try:
                for c in concurrencies:
                    try:
                        s = run_bench.run_wrk({"script": "floor.lua"}, srv, c)
                    except Exception as e:
                        print(f"r{rep} {name} c={c}: FAILED {e!r}", flush=True)
                        continue
                    s["repeat"] = rep
                    samples[name][str(c)].append(s)
                    print(
                        f"r{rep} {name:12} c={c:<3} {s['rps']:>8.1f} req/s p50 {s['p50_ms']:.2f} "
                        f"p99 {s['p99_ms']:.2f} ms srv {s['server_cpu_us_per_req']} us/req "
                        f"bad {s['errors']}",
                        flush=True,
                    )
            finally:
                srv.stop()
            time.sleep(0.5)
    return {"samples": samples}


def rr_table(result: dict[str, Any]) -> str:
    samples = result["samples"]
    lines = [
        "| scenario | c | req/s | p50 / p99 ms | server CPU µs/call | × its floor's CPU "
        "| bad/requests |",
        "|---|---|---|---|---|---|---|",
    ]
    for name, by_c in samples.items():
        for c, runs in by_c.items():
            med = {
                k: statistics.median(r[k] for r in runs)
                for k in ("rps", "p50_ms", "p99_ms", "server_cpu_us_per_req")
            }
            base = samples[FLOOR_OF.get(name, name)][c]
            floor = statistics.median(r["server_cpu_us_per_req"] for r in base)
            ratio = med["server_cpu_us_per_req"] / floor
            bad = sum(r["errors"] for r in runs)
            total = sum(r["total"] for r in runs)
            lines.append(
                f"| {name} | {c} | {med['rps']:,.0f} | {med['p50_ms']:.2f} / {med['p99_ms']:.2f} | "
                f"{med['server_cpu_us_per_req']:,.0f} | {ratio:.2f} | {bad}/{total} |"
            )
    return "\n".join(lines)


# ---------------------------------------------------------------------------------- latency


async def _latency_client(url: str, total: int, warmup: int) -> dict[str, Any]:
    import httpx

    limits = httpx.Limits(max_connections=1, max_keepalive_connections=1)
    took: list[float] = []
    bad = 0
    async with httpx.AsyncClient(limits=limits, timeout=30) as c:
        for i in range(warmup + total):
            start = time.perf_counter()
            response = await c.post(url, json={"a": 1, "b": 2})
            if i >= warmup:
                took.append((time.perf_counter() - start) * 1000)
                bad += response.status_code != 200 or '"data":"3"' not in response.text
    return {"p50_ms": pct(took, 50), "p99_ms": pct(took, 99), "max_ms": max(took),
            "requests": total, "bad": bad}  # fmt: skip


LATENCY = {"floor": uvicorn("apps:floor"), "kosong": kosong_serve("--rate-limit", UNREACHED)}


def bench_latency(repeats: int, total: int = 2000) -> dict[str, Any]:
    runs: list[dict[str, Any]] = []
    for rep in range(repeats):
        for name, argv in LATENCY.items():
            srv = Server(argv, f"latency-{name}-r{rep}")
            try:
                out = subprocess.run(
                    ["taskset", "-c", CLIENT_CPU, PY, __file__, "latency-client",
                     "--url", f"{srv.url}/tools/add", "--runs", str(total)],
                    capture_output=True, text=True, timeout=300, check=True,
                ).stdout  # fmt: skip
            finally:
                srv.stop()
            r = {"server": name, "repeat": rep, **json.loads(out.strip().splitlines()[-1])}
            runs.append(r)
            print(json.dumps(r), flush=True)
    return {"runs": runs}


def latency_table(result: dict[str, Any]) -> str:
    lines = ["| server | requests | p50 ms | p99 ms | max ms | bad |", "|---|---|---|---|---|---|"]
    for name in LATENCY:
        rs = [r for r in result["runs"] if r["server"] == name]
        m = {k: statistics.median(r[k] for r in rs) for k in ("p50_ms", "p99_ms", "max_ms")}
        lines.append(
            f"| {name} | {sum(r['requests'] for r in rs):,} | {m['p50_ms']:.2f} | "
            f"{m['p99_ms']:.2f} | {m['max_ms']:.1f} | {sum(r['bad'] for r in rs)} |"
        )
    return "\n".join(lines)


# -------------------------------------------------------------------------------------- sse


def pct(vals: list[float], p: float) -> float:
    s = sorted(vals)
    return s[min(len(s) - 1, max(0, round(p / 100 * len(s) + 0.5) - 1))] if s else float("nan")


async def _one_stream(port: int, drop_after: int | None, out: dict[str, Any]) -> None:
    SSEParser = importlib.import_module("sse_bench").SSEParser  # the anchor's WHATWG parser

    events: list[tuple[str, str]] = []
    lat: list[float] = []
    lag: list[float] = []
    opened = time.time()
    body = b'{"a":1,"b":2}'
    path, last_id, method = "/tools/progress/sse", None, "POST"
    run_path = None
    reconnects = 0
    error = ""
    while True:
        writer = None
        try:
            reader, writer = await asyncio.open_connection("127.0.0.1", port)
            head = f"{method} {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n"
            head += "Accept: text/event-stream\r\n"
            if method == "POST":
                head += f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n"
            if last_id:
                head += f"Last-Event-ID: {last_id}\r\n"
            writer.write(head.encode() + b"\r\n" + (body if method == "POST" else b""))
            raw = (await reader.readuntil(b"\r\n\r\n")).decode("latin-1")
            if not raw.startswith("HTTP/1.1 200"):
                raise RuntimeError(raw.splitlines()[0])
            found = re.search(r"(?im)^content-location: (\S+)", raw)
            run_path = found.group(1) if found else run_path
            parser = SSEParser()
            done = dropped = False
            while not done and not dropped:
                size = int((await reader.readuntil(b"\r\n")).split(b";")[0], 16)
                if size == 0:
                    break
                chunk = (await reader.readexactly(size + 2))[:-2].decode()
                for kind, data, eid in parser.feed(chunk):
                    now = time.time()
                    events.append((kind, eid))
                    last_id = eid
                    d = json.loads(data)
                    if kind == "tool_progress":
                        lat.append(now - float(d["message"]))
                    elif d.get("data") != "3":
                        error = f"bad result {d!r}"[:200]
                    # how late against an ideal server: event k due 10 ms x k after the open
                    lag.append(now - opened - 0.01 * min(len(events), 10))
                    if kind in ("tool_result", "tool_error"):
                        done = True
                        break
                    if drop_after is not None and reconnects == 0 and len(events) == drop_after:
                        dropped = True
                        break
            if done or not dropped:
                break
            reconnects += 1
            path, method = run_path, "GET"
        except Exception as e:
            error = repr(e)[:200]
            break
        finally:
            if writer is not None:
                writer.close()
    kinds = [k for k, _ in events]
    positions = [int(i.rpartition(".")[2]) for _, i in events]
    ok = (
        not error
        and kinds == ["tool_progress"] * 10 + ["tool_result"]
        and positions == list(range(1, 12))
    )
    out["streams"] += 1
    out["ok"] += ok
    out["events"] += len(events)
    out["duplicates"] += len(positions) - len(set(positions))
    out["missing"] += len(set(range(1, 12)) - set(positions))
    out["reconnects"] += reconnects
    out["lat_ms"] += [round(x * 1000, 3) for x in lat]
    out["lag_ms"] += [round(x * 1000, 2) for x in lag]
    if error and len(out["errors"]) < 5:
        out["errors"].append(error)


async def _client(
    port: int, streams: int, start_at: float, drop: bool, seed: int
) -> dict[str, Any]:
    rng = random.Random(seed)
    out: dict[str, Any] = {
        "streams": 0,
        "ok": 0,
        "events": 0,
        "duplicates": 0,
        "missing": 0,
        "reconnects": 0,
        "lat_ms": [],
        "lag_ms": [],
        "errors": [],
    }
    await asyncio.sleep(max(0.0, start_at - time.time()))
    t0 = time.time()
    await asyncio.gather(
        *(_one_stream(port, rng.randint(1, 10) if drop else None, out) for _ in range(streams))
    )
    out["wall_s"] = time.time() - t0
    return out


def sse_client_argv(port: int, streams: int, start_at: float, *more: str) -> list[str]:
    """The command of one `sse-client` process of this script, pinned to the client CPU."""
    return [
        "taskset", "-c", CLIENT_CPU, PY, __file__, "sse-client",
        "--port", str(port), "--streams", str(streams), "--start-at", str(start_at), *more,
    ]  # fmt: skip


def run_sse_ours(n: int, drop: bool, procs: int = 2) -> dict[str, Any]:
    psutil = importlib.import_module("psutil")

    tag = f"sse-kosong-{n}{'-drop' if drop else ''}"
    srv = Server(kosong_serve("--rate-limit", UNREACHED), tag)
    try:
        p = psutil.Process(srv.pid)
        subprocess.run(
            sse_client_argv(srv.port, 20, 0), capture_output=True, timeout=60, check=True
        )
        time.sleep(0.3)
        rss0 = p.memory_info().rss / 2**20
        cpu0 = sum(p.cpu_times()[:2])
        start_at = time.time() + 1.5
        LOG_DIR.mkdir(parents=True, exist_ok=True)
        files = [LOG_DIR / f"sse-kosong-client-{i}.json" for i in range(procs)]
        clients = [
            subprocess.Popen(
                sse_client_argv(
                    srv.port,
                    n // procs + (i < n % procs),
                    start_at,
                    *("--seed", str(i), "--result-file", str(f)),
                    *(["--drop"] if drop else []),
                )
            )
            for i, f in enumerate(files)
        ]
        peak = rss0
        deadline = time.time() + 120
        while any(c.poll() is None for c in clients) and time.time() < deadline:
            peak = max(peak, p.memory_info().rss / 2**20)
            time.sleep(0.02)
        for c in clients:
            if c.wait(10) != 0:
                raise RuntimeError("an SSE client failed")
        cpu = sum(p.cpu_times()[:2]) - cpu0
        outs = [json.loads(f.read_text()) for f in files]
    finally:
        srv.stop()
    lat = [x for o in outs for x in o["lat_ms"]]
    lag = [x for o in outs for x in o["lag_ms"]]
    return {
        "server": "kosong" + (" (drop + resume)" if drop else ""),
        "streams": n,
        "wall_s": round(max(o["wall_s"] for o in outs), 3),
        "streams_ok": sum(o["ok"] for o in outs),
        "events": sum(o["events"] for o in outs),
        "duplicates": sum(o["duplicates"] for o in outs),
        "missing": sum(o["missing"] for o in outs),
        "reconnects": sum(o["reconnects"] for o in outs),
        "lat_p50_ms": pct(lat, 50),
        "lat_p99_ms": pct(lat, 99),
        "lag_p50_ms": pct(lag, 50),
        "lag_p99_ms": pct(lag, 99),
        "rss_kib_per_stream": round((peak - rss0) * 1024 / n, 1),
        "server_cpu_s": round(cpu, 3),
        "errors": [e for o in outs for e in o["errors"]][:3],
    }


def run_sse_anchor(n: int) -> dict[str, Any]:
    sse_bench = importlib.import_module("sse_bench")  # the anchor's run, app and client

    r = sse_bench.one_run(n, 2, "raw")
    return {
        "server": "anchor: Starlette + sse-starlette (apps:sse)",
        "streams": n,
        "wall_s": r["wall_s"],
        "streams_ok": r["streams_ok"],
        "events": r["events"],
        "duplicates": 0,
        "missing": r["events_expected"] - r["events"],
        "reconnects": 0,
        "lat_p50_ms": r["lat_p50_ms"],
        "lat_p99_ms": r["lat_p99_ms"],
        "lag_p50_ms": r["lag_p50_ms"],
        "lag_p99_ms": r["lag_p99_ms"],
        "rss_kib_per_stream": round(
            (r["server_rss_peak_mib"] - r["server_rss_before_mib"]) * 1024 / n, 1
        ),
        "server_cpu_s": r["server_cpu_s"],
        "errors": r["error_sample"],
    }


def bench_sse(n: int, repeats: int) -> dict[str, Any]:
    runs = []
    for rep in range(repeats):
        for kind in ("anchor", "ours", "ours-drop"):
            r = run_sse_anchor(n) if kind == "anchor" else run_sse_ours(n, kind == "ours-drop")
            r["repeat"] = rep
            runs.append(r)
            print(f"r{rep} " + json.dumps(r), flush=True)
    return {"runs": runs}


def sse_table(result: dict[str, Any]) -> str:
    lines = [
        "| server | N | wall s | streams ok | events | lost / duplicated | reconnects | "
        "event lat p50 / p99 ms | lag p50 / p99 ms | RSS KiB per stream | server CPU s |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    groups: dict[str, list[dict[str, Any]]] = {}
    for r in result["runs"]:
        groups.setdefault(r["server"], []).append(r)
    for server, rs in groups.items():
        m = {
            k: statistics.median(r[k] for r in rs)
            for k in (
                "wall_s",
                "lat_p50_ms",
                "lat_p99_ms",
                "lag_p50_ms",
                "lag_p99_ms",
                "rss_kib_per_stream",
                "server_cpu_s",
            )
        }
        ok = "/".join(str(r["streams_ok"]) for r in rs)
        events = "/".join(str(r["events"]) for r in rs)
        lost = sum(r["missing"] for r in rs)
        dup = sum(r["duplicates"] for r in rs)
        rec = "/".join(str(r["reconnects"]) for r in rs)
        lines.append(
            f"| {server} | {rs[0]['streams']:,} | {m['wall_s']:.2f} | {ok} | {events} "
            f"| {lost} / {dup} | {rec} | {m['lat_p50_ms']:.2f} / {m['lat_p99_ms']:.2f} "
            f"| {m['lag_p50_ms']:,.0f} / {m['lag_p99_ms']:,.0f} "
            f"| {m['rss_kib_per_stream']:.1f} | {m['server_cpu_s']:.2f} |"
        )
    return "\n".join(lines)


# ------------------------------------------------------------------------------------- kill


async def _kill_client(a: str, b: str, runs: int, kill: Any) -> list[dict[str, Any]]:
    import httpx
    from httpx_sse import EventSource

    results: list[dict[str, Any]] = [{} for _ in range(runs)]
    started = 0
    all_started = asyncio.Event()

    async def one(i: int) -> None:
        nonlocal started
        base = a if i % 2 == 0 else b
        seen: list[tuple[str, str, dict[str, Any]]] = []
        run_path, last_id = None, None
        async with httpx.AsyncClient(timeout=60) as c:
            for attempt in range(5):
                if run_path is None:
                    request = c.build_request(
                        "POST", f"{base}/tools/progress/sse", json={"a": 1, "b": 2}
                    )
                else:
                    request = c.build_request(
                        "GET", f"{b}{run_path}", headers={"Last-Event-ID": last_id or ""}
                    )
                try:
                    response = await c.send(request, stream=True)
                    run_path = response.headers.get("content-location", run_path)
                    if attempt == 0:
                        started += 1
                        if started == runs:
                            all_started.set()
                    async for sse in EventSource(response).aiter_sse():
                        if sse.id:
                            last_id = sse.id
                        if sse.data:
                            seen.append((sse.event, sse.id, json.loads(sse.data)))
                            if sse.event in ("tool_result", "tool_error"):
                                break
                    await response.aclose()
                    if seen and seen[-1][0] in ("tool_result", "tool_error"):
                        break
                except httpx.HTTPError:
                    await asyncio.sleep(0.2)
        results[i] = {"on": "A" if base == a else "B", "run": run_path, "events": seen}

    tasks = [asyncio.ensure_future(one(i)) for i in range(runs)]
    await asyncio.wait_for(all_started.wait(), 60)
    await asyncio.sleep(0.7)  # a few events in
    kill()
    await asyncio.gather(*tasks)
    return results


def bench_kill(runs: int) -> dict[str, Any]:
    import redis

    binary = shutil.which("redis-server")
    if binary is None:
        raise SystemExit("redis-server is needed (apt-get install redis-server)")
    port = free_port()
    workdir = tempfile.mkdtemp(prefix="kosong-bench-redis-")
    rs = subprocess.Popen(
        [
            binary,
            "--port",
            str(port),
            "--bind",
            "127.0.0.1",
            "--save",
            "",
            "--appendonly",
            "no",
            "--dir",
            workdir,
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    url = f"redis://127.0.0.1:{port}/0"
    env = {"SSE_INTERVAL_MS": "200"}
    time.sleep(0.5)
    serve = kosong_serve("--redis", url, "--lease", "2", "--rate-limit", "off")
    a = Server(serve, "kill-a", env)
    b = Server(serve, "kill-b", env)
    try:

        def kill() -> None:
            os.kill(a.pid, signal.SIGKILL)

        t0 = time.time()
        results = asyncio.run(_kill_client(a.url, b.url, runs, kill))
        wall = time.time() - t0
        client = redis.Redis.from_url(url, decode_responses=True)
        lost = duplicated = a_errors = b_results = bad = 0
        finals: list[Any] = []
        for r in results:
            run_id = r["run"].removeprefix("/runs/")
            entries: Any = client.xrange(f"kosong:run:{{{run_id}}}:e")
            stored = [eid for eid, _ in entries]
            got = [e[1].rpartition(".")[2] for e in r["events"]]
            lost += len(set(stored) - set(got))
            duplicated += len(got) - len(set(got))
            bad += got != stored
            final = r["events"][-1] if r["events"] else ("", "", {})
            if final[0] == "tool_error" and "may or may not" in final[2]["error"]["message"]:
                a_errors += 1
            elif final[0] == "tool_result":
                b_results += 1
            elif len(finals) < 3:
                finals.append((final[0], str(final[2])[:300], len(r["events"])))
        client.close()
    finally:
        a.stop()
        b.stop()
        rs.terminate()
        rs.wait(10)
        shutil.rmtree(workdir, ignore_errors=True)
    out = {
        "runs": runs,
        "on_a": runs // 2 + runs % 2,
        "on_b": runs // 2,
        "lost": lost,
        "duplicated": duplicated,
        "runs_not_exactly_as_stored": bad,
        "runs_on_a_ended_may_or_may_not": a_errors,
        "runs_with_result": b_results,
        "events": sum(len(r["events"]) for r in results),
        "wall_s": round(wall, 2),
        "other_finals": finals,
    }
    print(json.dumps(out), flush=True)
    return out


# ------------------------------------------------------------------------------------ queue


def _cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of a process so far (Linux /proc)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def kosong_worker(url: str) -> Any:
    def argv(port: int) -> list[str]:
        return [
            PY, "-m", "kosong", "worker", f"{HERE / 'server_apps.py'}:tools", "--redis", url,
            "--log-level", "warning",
        ]  # fmt: skip

    return argv


class _Worker:
    """A `kosong worker` process (it listens on no port)."""

    def __init__(self, url: str, tag: str) -> None:
        LOG_DIR.mkdir(parents=True, exist_ok=True)
        self.log = open(LOG_DIR / f"{tag}.log", "w")  # noqa: SIM115
        self.proc = subprocess.Popen(
            ["taskset", "-c", SERVER_CPU, *kosong_worker(url)(0)], cwd=HERE,
            stdout=self.log, stderr=subprocess.STDOUT, env={**os.environ, "SSE_INTERVAL_MS": "0"},
        )  # fmt: skip
        deadline = time.time() + 30
        while "worker running" not in Path(self.log.name).read_text():
            if self.proc.poll() is not None or time.time() > deadline:
                raise RuntimeError(f"the worker did not start, see {self.log.name}")
            time.sleep(0.1)

    @property
    def pid(self) -> int:
        return self.proc.pid

    def stop(self) -> None:
        self.proc.terminate()
        self.proc.wait(30)
        self.log.close()


async def _first_events(url: str, runs: int) -> list[float]:
    import httpx
    from httpx_sse import EventSource

    waits: list[float] = []
    async with httpx.AsyncClient(timeout=30) as c:
        for i in range(runs + 20):
            started = time.perf_counter()
            async with c.stream("POST", f"{url}/tools/progress/sse", json={"a": 1, "b": 2}) as r:
                first = None
                async for sse in EventSource(r).aiter_sse():
                    if sse.data and first is None:
                        first = time.perf_counter() - started
                    if sse.event in ("tool_result", "tool_error"):
                        break
            if i >= 20 and first is not None:  # the first 20 warm up
                waits.append(first * 1000)
    return waits


async def _throughput(url: str, calls: int, concurrency: int = 64) -> float:
    import httpx

    left = calls

    async def client(c: Any) -> None:
        nonlocal left
        while left > 0:
            left -= 1
            response = await c.post(f"{url}/tools/add", json={"a": 1, "b": 2})
            assert response.status_code == 200, response.text

    limits = httpx.Limits(max_connections=concurrency)
    async with httpx.AsyncClient(timeout=60, limits=limits) as c:
        await asyncio.gather(*(client(c) for _ in range(20)))  # warm up
        left = calls
        started = time.perf_counter()
        await asyncio.gather(*(client(c) for _ in range(concurrency)))
        return calls / (time.perf_counter() - started)


def bench_queue(runs: int) -> dict[str, Any]:
    binary = shutil.which("redis-server")
    if binary is None:
        raise SystemExit("redis-server is needed (apt-get install redis-server)")
    env = {"SSE_INTERVAL_MS": "0"}
    out: dict[str, Any] = {"runs": runs}

    def one(name: str, options: tuple[str, ...], workers: int, redis_url: str | None) -> None:
        front = Server(kosong_serve("--rate-limit", "off", *options), f"queue-{name}", env)
        spawned = [_Worker(redis_url or "", f"queue-{name}-w{i}") for i in range(workers)]
        pids = [front.pid, *(w.pid for w in spawned)]
        try:
            before = sum(_cpu_seconds(p) for p in pids)
            waits = asyncio.run(_first_events(front.url, runs))
            cpu = sum(_cpu_seconds(p) for p in pids) - before
            row: dict[str, Any] = {
                "first_event_p50_ms": round(pct(waits, 50), 2),
                "first_event_p99_ms": round(pct(waits, 99), 2),
                "server_cpu_ms_per_run": round(cpu * 1000 / (runs + 20), 3),
            }
            if workers:
                row["runs_per_s"] = round(asyncio.run(_throughput(front.url, runs * 5)), 1)
            out[name] = row
            print(name, json.dumps(row), flush=True)
        finally:
            front.stop()
            for w in spawned:
                w.stop()

    one("in-process", (), 0, None)
    port = free_port()
    workdir = tempfile.mkdtemp(prefix="kosong-bench-redis-")
    rs = subprocess.Popen(
        [binary, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
         "--dir", workdir],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    url = f"redis://127.0.0.1:{port}/0"
    time.sleep(0.5)
    try:
        one("queued, front end's slots", ("--redis", url), 0, url)
        one("queued, 1 worker", ("--redis", url, "--workers", "0"), 1, url)
        one("queued, 2 workers", ("--redis", url, "--workers", "0"), 2, url)
    finally:
        rs.terminate()
        rs.wait(10)
        shutil.rmtree(workdir, ignore_errors=True)
    return out


def queue_table(result: dict[str, Any]) -> str:
    lines = [
        "| runs executed | first event p50 / p99 ms | server CPU ms per run "
        "| runs/s (64 clients) |",
        "|---|---|---|---|",
    ]
    for name, row in result.items():
        if not isinstance(row, dict):
            continue
        rate = row.get("runs_per_s", "")
        lines.append(
            f"| {name} | {row['first_event_p50_ms']} / {row['first_event_p99_ms']} "
            f"| {row['server_cpu_ms_per_run']} | {rate} |"
        )
    return "\n".join(lines)


# ------------------------------------------------------------------------------------- main


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument(
        "what",
        choices=["rr", "latency", "sse", "kill", "queue", "all", "sse-client", "latency-client"],
    )
    ap.add_argument("--url")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--concurrency", default="1,16,64")
    ap.add_argument("--streams", default="1000")
    ap.add_argument("--runs", type=int, default=200)
    ap.add_argument("--out")
    ap.add_argument("--port", type=int)
    ap.add_argument("--start-at", type=float, default=0)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--drop", action="store_true")
    ap.add_argument("--result-file", default="/dev/null")
    args = ap.parse_args()
    if args.what == "sse-client":
        out = asyncio.run(
            _client(args.port, int(args.streams), args.start_at, args.drop, args.seed)
        )
        Path(args.result_file).write_text(json.dumps(out))
        return
    if args.what == "latency-client":
        print(json.dumps(asyncio.run(_latency_client(args.url, args.runs, 200))))
        return
    # The anchor's sse_bench runs its server and clients with <root>/srvbench-mcp/bin/python:
    # point it at this venv, so every row runs on the same interpreter and libraries.
    root = Path(tempfile.gettempdir()) / "srvbench-kosong-root"
    root.mkdir(exist_ok=True)
    link = root / "srvbench-mcp"
    venv = Path(PY).parents[1]
    if link.is_symlink() and link.readlink() != venv:  # left by a run from another venv
        link.unlink()
    if not link.exists():
        link.symlink_to(venv)
    os.environ["SRVBENCH_VENV_ROOT"] = str(root)
    result: dict[str, Any] = {"started": time.strftime("%Y-%m-%d %H:%M:%S"), "python": sys.version}
    if args.what in ("rr", "all"):
        result["rr"] = bench_rr(args.repeats, [int(c) for c in args.concurrency.split(",")])
    if args.what in ("latency", "all"):
        result["latency"] = bench_latency(args.repeats)
    if args.what in ("sse", "all"):
        result["sse"] = bench_sse(int(args.streams), args.repeats)
    if args.what in ("kill", "all"):
        result["kill"] = bench_kill(args.runs)
    if args.what in ("queue", "all"):
        result["queue"] = bench_queue(args.runs)
    if "rr" in result:
        print(rr_table(result["rr"]))
    if "latency" in result:
        print(latency_table(result["latency"]))
    if "sse" in result:
        print(sse_table(result["sse"]))
    if "kill" in result:
        print(json.dumps(result["kill"]))
    if "queue" in result:
        print(queue_table(result["queue"]))
    if args.out:
        Path(args.out).write_text(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
