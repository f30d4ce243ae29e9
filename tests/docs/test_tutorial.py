"""docs/tutorial.md, run as a newcomer runs it: every command in order, servers as users start them.

The page is read as its reader reads it: a ```bash block is commands typed one by one (`cd` and
`. .venv/bin/activate` carry over to the next ones, `kosong serve` keeps running in another
terminal), a ```python block after "Save this as `NAME`" is that file, run when the text says
"run `python NAME`" (its output compared with what its comments say), the ```json block is
the `mcpServers` entry an MCP client launches. The port is a free one instead of 8000.

`test_the_tutorial_runs_in_the_development_environment` runs every step after the install in the
suite's environment. `test_a_newcomer_installs_as_the_readme_says_and_runs_the_tutorial`
(marker `newcomer`: `pytest -m newcomer` runs it alone) starts from a copy of the repository's
files, as a fresh clone has them, with only `python3`: it makes the virtualenv, installs the way
the page and the README say, and runs every step.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import pytest
from mcp.client.stdio import StdioServerParameters

from mcp import Client
from tests._local import free_port
from tests.docs._markdown import blocks
from tests.docs._printed import expectations
from tests.mcp._mcp_servers import wait_for_port

ROOT = Path(__file__).resolve().parents[2]
TUTORIAL = ROOT / "docs" / "tutorial.md"
INSTALL_LINES = ("python3 -m venv", ". .venv/bin/activate", "pip install")


@dataclass
class Step:
    """One block of the page: commands, a file to save (and maybe run), or a JSON entry."""

    kind: str
    text: str
    file: str | None = None
    run: bool = False


def tutorial_steps() -> list[Step]:
    text = TUTORIAL.read_text(encoding="utf-8")
    lines = text.splitlines()
    steps: list[Step] = []
    for block in blocks(text):
        before = "\n".join(lines[max(0, block.line - 4) : block.line - 1])
        saved = re.search(r"Save this as `([\w.]+)`", before)
        if block.language == "python":
            assert saved, f"tutorial.md:{block.line}: say which file the block is"
            name = saved.group(1)
            steps.append(Step("file", block.source, name, f"run `python {name}`" in before))
        else:
            steps.append(Step(block.language, block.source))
    return steps


@dataclass
class Newcomer:
    """A shell, as the reader has it: a folder, maybe an activated venv, servers left running."""

    cwd: Path
    port: int
    venv_bin: Path | None = None
    install: bool = True
    outputs: dict[str, str] = field(default_factory=dict[str, str])
    servers: list[subprocess.Popen[bytes]] = field(default_factory=list[subprocess.Popen[bytes]])

    def env(self) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "PYTHONPATH")}
        env.pop("KIMI_API_KEY", None)  # the tutorial's offline path
        if self.venv_bin is not None:
            env["PATH"] = f"{self.venv_bin}{os.pathsep}{env['PATH']}"
            env["VIRTUAL_ENV"] = str(self.venv_bin.parent)
        return env

    def type(self, line: str) -> None:
        line = line.replace("127.0.0.1:8000", f"127.0.0.1:{self.port}")
        if line.startswith(INSTALL_LINES) and not self.install:
            return  # the suite's environment has them already
        if line.startswith("cd "):
            self.cwd = (self.cwd / line[3:].strip()).resolve()
            return
        if line == ". .venv/bin/activate":
            self.venv_bin = self.cwd / ".venv" / "bin"
            assert (self.venv_bin / "python").exists(), "the venv was not made"
            return
        if line.startswith("kosong serve "):
            server = subprocess.Popen(
                ["bash", "-c", f"exec {line} --port {self.port}"], cwd=self.cwd, env=self.env(),
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            )  # fmt: skip
            self.servers.append(server)
            wait_for_port(self.port)
            return
        done = subprocess.run(
            ["bash", "-c", line], cwd=self.cwd, env=self.env(), capture_output=True, text=True,
            timeout=600, check=False,
        )  # fmt: skip
        assert done.returncode == 0, f"`{line}` failed:\n{done.stdout}\n{done.stderr}"
        self.outputs[line] = done.stdout

    def save(self, step: Step) -> None:
        assert step.file is not None
        (self.cwd / step.file).write_text(step.text, encoding="utf-8")
        if not step.run:
            return
        done = subprocess.run(
            ["bash", "-c", f"python {step.file}"], cwd=self.cwd, env=self.env(),
            capture_output=True, text=True, timeout=120, check=False,
        )  # fmt: skip
        assert done.returncode == 0, f"python {step.file} failed:\n{done.stderr}"
        said = [line for _, lines in sorted(expectations(step.text).items()) for line in lines]
        assert done.stdout.splitlines() == said, f"python {step.file} printed {done.stdout!r}"

    async def launch_the_mcp_entry(self, step: Step) -> None:
        """Start the server the `mcpServers` entry names, as Claude Desktop does (official SDK)."""
        entry = json.loads(step.text)["mcpServers"]["weather"]
        assert entry["command"].endswith("/.venv/bin/kosong")
        assert entry["args"][0] == "mcp" and entry["args"][1].endswith("/my-tools/weather.py")
        assert self.venv_bin is not None
        kosong = shutil.which("kosong", path=str(self.venv_bin)) or "kosong"
        params = StdioServerParameters(
            command=kosong, args=["mcp", str(self.cwd / "weather.py")], env=self.env()
        )
        async with Client(params) as client:
            listed = await client.list_tools()
            called = await client.call_tool("get_weather", {"city": "Paris"})
        assert [tool.name for tool in listed.tools] == ["get_weather"]
        assert called.content[0].text == "Paris: 18°C, light rain"  # pyright: ignore[reportAttributeAccessIssue]

    def stop_servers(self) -> None:
        for server in self.servers:
            server.kill()
            server.wait(10)


async def follow_the_tutorial(shell: Newcomer) -> None:
    """Every step of the page, in order; then what the steps printed is what the page says."""
    try:
        for step in tutorial_steps():
            if step.kind == "bash":
                for line in step.text.splitlines():
                    if line.strip() and not line.startswith("#"):
                        await asyncio.to_thread(shell.type, line.strip())
            elif step.kind == "file":
                await asyncio.to_thread(shell.save, step)
            elif step.kind == "json":
                await shell.launch_the_mcp_entry(step)
            if step.kind == "bash" and "kosong serve weather.py" in step.text:
                page = await asyncio.to_thread(httpx.get, f"http://127.0.0.1:{shell.port}/")
                assert page.status_code == 200 and "kosong inspector" in page.text
    finally:
        shell.stop_servers()
    out = shell.outputs
    assert "get_weather" in out["kosong tools list weather.py"]
    schema = json.loads(out["kosong tools schema weather.py get_weather"])
    assert (
        schema["parameters"]["properties"]["city"]["description"]
        == "The city's name, such as Paris."
    )
    url = f"http://127.0.0.1:{shell.port}"
    assert out[f'kosong tools call {url} get_weather \'{{"city": "Paris"}}\''] == (
        "Paris: 18°C, light rain\n"
    )
    envelope = json.loads(out[f"kosong tools call {url} get_weather -a city=Tokyo --json"])
    assert envelope["data"] == "Tokyo: 24°C, sunny"
    assert [t["name"] for t in json.loads(out[f"curl -s {url}/tools"])["tools"]] == ["get_weather"]
    posted = next(v for k, v in out.items() if k.startswith("curl -s -X POST"))
    assert json.loads(posted)["data"] == "Paris: 18°C, light rain"
    streamed = next(v for k, v in out.items() if k.startswith("curl -s -N"))
    assert "event: tool_result" in streamed and "Paris: 18°C, light rain" in streamed
    stdio = out['kosong tools call "kosong mcp weather.py" get_weather \'{"city": "Tokyo"}\'']
    assert stdio == "Tokyo: 24°C, sunny\n"


@pytest.mark.external  # a newcomer's shell: `kosong serve`, `kosong tools`
async def test_the_tutorial_runs_in_the_development_environment(tmp_path: Path) -> None:
    shell = Newcomer(tmp_path, free_port(), Path(sys.executable).parent, install=False)
    await follow_the_tutorial(shell)


def _copy_of_the_repository(to: Path) -> Path:
    """The repository's files as a fresh clone has them (with this work tree's changes)."""
    listed = subprocess.run(
        ["git", "ls-files", "--cached", "--others", "--exclude-standard", "-z"],
        cwd=ROOT, capture_output=True, text=True, check=True,
    ).stdout.split("\0")  # fmt: skip
    for name in listed:
        source = ROOT / name
        if not name or name.startswith(".ci/mcp-tools/node_modules") or not source.is_file():
            continue
        (to / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(source, to / name)
    return to


@pytest.mark.external  # pip and a fresh venv, then the tutorial's shell
@pytest.mark.newcomer
@pytest.mark.timeout(900)
async def test_a_newcomer_installs_as_the_readme_says_and_runs_the_tutorial(
    tmp_path: Path,
) -> None:
    python3 = shutil.which("python3")
    assert python3 is not None
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert "pip install -e '.[server,mcp]'" in readme  # the README's install line is the page's
    started = time.monotonic()
    clone = _copy_of_the_repository(tmp_path / "kosong")
    shell = Newcomer(clone, free_port())
    await follow_the_tutorial(shell)
    took = time.monotonic() - started
    print(f"from a fresh copy of the repository to the tutorial's last step: {took:.0f} s")


def test_the_readmes_serving_commands_are_the_tutorials_which_the_suite_runs() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    tutorial = TUTORIAL.read_text(encoding="utf-8")
    section = readme.split("## Serving your tools", 1)[1].split("\n## ", 1)[0]
    serving = next(b for b in blocks(section) if b.language == "bash")
    commands = [line.split("  #")[0].strip() for line in serving.source.splitlines()]
    assert commands and all(command in tutorial for command in commands), commands
    install = next(b for b in blocks(readme.split("## Install", 1)[1]) if b.language == "bash")
    assert all(line.split("  #")[0].strip() in tutorial for line in install.source.splitlines())
