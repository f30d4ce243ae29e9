"""Tools that write to stdout in every way they can: at import, during a call, at exit.

Served over stdio (`kosong mcp tests/mcp/_noisy_tools.py:tools`), none of it may reach the
protocol stream.
"""

from __future__ import annotations

import atexit
import logging
import subprocess
import sys

from kosong.tooling import tool

print("printed while importing, not even a newline", end="")
logging.basicConfig(stream=sys.stdout, level=logging.INFO, format="%(message)s")
atexit.register(lambda: print("printed at exit, after the session", flush=False))


@tool
def noisy() -> str:
    """Print, log to stdout and run a child process that prints; then answer."""
    print("printed during the call", end="")
    logging.getLogger("noisy").info("logged to stdout during the call")
    subprocess.run([sys.executable, "-c", "print('printed by a child process')"], check=True)
    return "quiet answer"


tools = [noisy]
