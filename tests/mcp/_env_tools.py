"""A tool that tells where its server runs: served over stdio by the ServerSpec tests."""

from __future__ import annotations

import os

from kosong.tooling import tool


@tool
def where() -> dict[str, str]:
    """The server's working directory and the value of KOSONG_TEST_VALUE."""
    return {"cwd": os.getcwd(), "value": os.environ.get("KOSONG_TEST_VALUE", "")}


tools = [where]
