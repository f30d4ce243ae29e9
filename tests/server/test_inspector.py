"""The inspector's routes over HTTP: the page, its files, `/dialects`, and the checks on them.

What the page does in a browser is tested in test_inspector_browser.py.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
import zipfile
from pathlib import Path

import httpx
import pytest

from kosong.dialects import DIALECTS
from kosong.server import ServerConfig, create_app, serving
from kosong.tooling import CallableTool, ToolOk, ToolReturnValue
from tests.server._tools import tools

ROOT = Path(__file__).resolve().parents[2]
ASSETS = ROOT / "src" / "kosong" / "server" / "inspector"
MODULES = sorted(p.name for p in ASSETS.glob("*.js"))


async def test_the_page_is_served_at_the_root_with_its_files() -> None:
    async with serving(create_app(tools)) as url, httpx.AsyncClient(base_url=url) as c:
        page = await c.get("/")
        files = {name: await c.get(f"/inspector/{name}") for name in [*MODULES, "inspector.css"]}
    assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
    assert '<script type="module" src="inspector/main.js">' in page.text
    policy = page.headers["content-security-policy"]
    assert "script-src 'self'" in policy and "connect-src 'self'" in policy
    assert "frame-ancestors 'none'" in policy
    assert page.headers["x-content-type-options"] == "nosniff"
    for name, response in files.items():
        assert response.status_code == 200, name
        expected = "text/css" if name.endswith(".css") else "javascript"
        assert expected in response.headers["content-type"], name
        assert response.headers["content-security-policy"] == policy


def test_the_page_loads_nothing_from_elsewhere() -> None:
    # No CDN, no remote font, no inline script: every reference is to the package's own files.
    for path in ASSETS.iterdir():
        text = path.read_text(encoding="utf-8")
        assert not re.search(r"""(src|href)=["']?(https?:)?//""", text), path.name
        assert not re.search(r"""\bimport\b[^;]*?from\s+["'](?!\./)""", text), path.name
        assert "@import" not in text and "url(http" not in text, path.name
    assert "<script>" not in (ASSETS / "index.html").read_text(encoding="utf-8")


async def test_the_page_needs_no_token_but_everything_it_calls_does() -> None:
    app = create_app(tools, ServerConfig(token="s3cret"))
    async with serving(app) as url, httpx.AsyncClient(base_url=url) as c:
        page = await c.get("/")
        script = await c.get("/inspector/main.js")
        listing = await c.get("/tools")
        dialects = await c.get("/dialects")
        unknown = await c.get("/inspector/secret.txt")
        authorized = await c.get("/dialects", headers={"Authorization": "Bearer s3cret"})
    assert page.status_code == script.status_code == 200
    assert listing.status_code == dialects.status_code == unknown.status_code == 401
    assert authorized.status_code == 200


async def test_the_page_gets_the_host_and_origin_checks() -> None:
    async with serving(create_app(tools)) as url, httpx.AsyncClient(base_url=url) as c:
        foreign = await c.get("/", headers={"Host": "evil.example.com"})
        framed = await c.get("/inspector/main.js", headers={"Origin": "http://evil.example.com"})
        same = await c.get("/", headers={"Origin": url})
    assert foreign.status_code == 421 and framed.status_code == 403 and same.status_code == 200
    assert "access-control-allow-origin" not in same.headers  # same origin only: no CORS


class StrictAdd(CallableTool):
    name: str = "strict_add"
    description: str = "Add two integers, in strict mode."
    parameters: dict[str, object] = {
        "type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
    }  # fmt: skip
    strict: bool | None = True

    async def __call__(self, a: int, b: int) -> ToolReturnValue:
        return ToolOk(output=str(a + b))


async def test_dialects_reports_each_tool_against_each_provider() -> None:
    strict_add = StrictAdd()
    async with (
        serving(create_app([*tools, strict_add])) as url,
        httpx.AsyncClient(base_url=url) as c,
    ):
        report = (await c.get("/dialects")).json()
    assert report["dialects"] == list(DIALECTS)
    assert set(report["sources"]) == set(DIALECTS)
    assert all(report["sources"][d] for d in DIALECTS)
    # Strict mode's rules are for the tools sent in strict mode only.
    assert not [f for f in report["findings"] if f["tool"] == "add"]
    add_strict = [f for f in report["findings"] if f["tool"] == "strict_add"]
    assert {f["dialect"] for f in add_strict} == {"openai-strict"}
    finding = add_strict[0]
    assert set(finding) == {"tool", "dialect", "path", "rule", "effect", "message", "fix"}
    assert finding["effect"] == "rejected" and finding["path"].startswith("parameters")


async def test_the_inspector_can_be_left_out() -> None:
    app = create_app(tools, ServerConfig(inspector=False, token="s3cret"))
    async with serving(app) as url, httpx.AsyncClient(base_url=url) as c:
        root = await c.get("/", headers={"Authorization": "Bearer s3cret"})
        script = await c.get("/inspector/main.js")
    assert root.status_code == 404
    assert script.status_code == 401  # not public when there is no page


@pytest.mark.external  # `kosong serve`
def test_kosong_serve_serves_the_example_page() -> None:
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    command = [sys.executable, "-m", "kosong", "serve", "examples/inspector_tools.py:toolset",
               "--port", "0", "--log-level", "warning"]  # fmt: skip
    proc = subprocess.Popen(command, cwd=ROOT, stderr=subprocess.PIPE, text=True, env=env)
    assert proc.stderr is not None
    try:
        lines: list[str] = []
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and not any("browser" in line for line in lines):
            line = proc.stderr.readline()
            if not line:
                break
            lines.append(line)
        found = re.search(r"inspect them in a browser: (http://\S+/)", "".join(lines))
        assert found, lines
        page = httpx.get(found.group(1), timeout=10)
        listed = httpx.get(found.group(1) + "tools", timeout=10).json()
    finally:
        proc.terminate()
        proc.wait(30)
        proc.stderr.close()
    assert page.status_code == 200 and "kosong inspector" in page.text
    assert [t["name"] for t in listed["tools"]] == [
        "crawl_site", "plan_trip", "rainfall_chart", "exchange_rate", "flaky_lookup",
        "legacy_forecast", "forget_trip",
    ]  # fmt: skip


@pytest.mark.external  # builds the wheel in a child process
def test_the_wheel_ships_the_page(tmp_path: Path) -> None:
    build = "import sys, hatchling.build as b; print(b.build_wheel(sys.argv[1]))"
    done = subprocess.run(
        [sys.executable, "-c", build, str(tmp_path)],
        cwd=ROOT, capture_output=True, text=True, timeout=120, check=True,
    )  # fmt: skip
    wheel = tmp_path / done.stdout.strip().splitlines()[-1]
    with zipfile.ZipFile(wheel) as archive:
        shipped = {n for n in archive.namelist() if n.startswith("kosong/server/inspector/")}
    expected = {f"kosong/server/inspector/{p.name}" for p in ASSETS.iterdir()}
    assert shipped == expected
