#!/usr/bin/env bash
# The venv of benchmarks/bench_server.py: the server anchor's pinned stack (its constraints
# file) with kosong installed from this checkout, on the anchor's Python (pyenv 3.12.1).
#   VENV (default /tmp/srvbench-kosong)   PY (default: pyenv's 3.12.1)
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
ANCHOR="${ANCHOR_DIR:-$ROOT/../shared/anchor-bench/server}"
VENV="${VENV:-/tmp/srvbench-kosong}"
PY="${PY:-$(PYENV_VERSION=3.12.1 pyenv which python3.12 2>/dev/null || command -v python3.12)}"
rm -rf "$VENV"
"$PY" -m venv "$VENV"
"$VENV/bin/pip" install -q starlette sse-starlette uvicorn httpx httpx-sse psutil \
  -c "$ANCHOR/constraints-mcp.txt"
"$VENV/bin/pip" install -q -e "$ROOT[server]" -c "$ANCHOR/constraints-mcp.txt"
command -v wrk >/dev/null || { apt-get update -qq && apt-get install -y -qq wrk; }
command -v redis-server >/dev/null || { apt-get update -qq && apt-get install -y -qq redis-server; }
echo "ok: $VENV/bin/python benchmarks/bench_server.py all --repeats 3"
