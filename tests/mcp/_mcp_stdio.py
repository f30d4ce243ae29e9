"""Serve a test server over stdio: `python _mcp_stdio.py kosong|sdk [PIDFILE]`."""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repository: tests._local
sys.path.insert(0, str(Path(__file__).resolve().parent))

from _mcp_servers import kosong_toolset, serve_sdk_stdio

from kosong.mcp import MCPToolServer

if __name__ == "__main__":
    if len(sys.argv) > 2:  # tell the test who to kill, and when a call started
        Path(sys.argv[2]).write_text(str(os.getpid()))
        os.environ["KOSONG_TEST_STARTED"] = sys.argv[2] + ".started"
    if sys.argv[1] == "sdk":
        asyncio.run(serve_sdk_stdio())
    else:
        asyncio.run(MCPToolServer(kosong_toolset(), name="kosong-stdio").run_stdio())
