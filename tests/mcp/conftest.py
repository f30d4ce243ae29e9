"""Fixtures for the kosong.mcp tests: real servers on free loopback ports, in-process or not."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))  # the tests import _mcp_servers
