#!/usr/bin/env bash
# The venvs of benchmarks/bench_agent_loop.py and benchmarks/bench_scale.py, on one interpreter:
#   $ROOT/peers     kosong from this checkout (editable, with `search` and the OpenAI/Anthropic
#                   SDKs) beside pydantic-ai, openai-agents and LangChain (`create_agent`),
#                   at the versions of the shared anchor (langchain 1.5.0, whose create_agent
#                   needs a newer langchain-core than the anchor's 1.7.2); matplotlib, the plot
#   $ROOT/kosong056 the published kosong 0.56.0 alone (it pins openai<2.15), with the anchor's
#                   constraints for its venv
#   ROOT (default /tmp/kosong-bench)   PY (default: pyenv's 3.13.0, the interpreter of .venv)
set -euo pipefail
HERE="$(cd "$(dirname "$0")/.." && pwd)"
ANCHOR="${ANCHOR_DIR:-$HERE/../shared/anchor-bench}"
ROOT="${ROOT:-/tmp/kosong-bench}"
PY="${PY:-$(PYENV_VERSION=3.13.0 pyenv which python3.13 2>/dev/null || command -v python3.13)}"
mkdir -p "$ROOT"
rm -rf "${ROOT:?}/peers" "${ROOT:?}/kosong056"
"$PY" -m venv "$ROOT/peers"
"$ROOT/peers/bin/pip" install -q -e "$HERE[search,openai,anthropic]" \
  pydantic-ai-slim==2.68.0 openai-agents==0.24.0 langchain==1.5.0 \
  matplotlib
"$ROOT/peers/bin/pip" check
"$PY" -m venv "$ROOT/kosong056"
"$ROOT/kosong056/bin/pip" install -q kosong==0.56.0 -c "$ANCHOR/constraints-kosong.txt"
"$ROOT/kosong056/bin/pip" check
echo "ok: $ROOT/peers/bin/python benchmarks/bench_agent_loop.py"
