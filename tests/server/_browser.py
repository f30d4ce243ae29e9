"""Debian's Chromium driven by Playwright, for the tests of what a real browser does."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from tests._local import missing

CHROMIUM = os.environ.get("KOSONG_CHROMIUM") or shutil.which("chromium") or "/usr/bin/chromium"
FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


def chromium_or_skip() -> str:
    """Chromium's path; without it, skip (in CI: fail, a missing browser is no excuse)."""
    if not Path(CHROMIUM).exists():
        missing(f"Chromium is not installed at {CHROMIUM} (apt-get install chromium; .ci/run does)")
    return CHROMIUM
