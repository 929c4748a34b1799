#!/usr/bin/env bash
# Run the demo from a fresh machine: creates .venv, installs the project, runs `wop-langgraph demo`.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON="${PYTHON:-python3}"
VENV="${WOP_VENV:-.venv}"
if [ ! -x "$VENV/bin/python" ]; then
  "$PYTHON" -m venv "$VENV"
fi
"$VENV/bin/python" -m pip install --quiet --upgrade pip
"$VENV/bin/python" -m pip install --quiet -e .
"$VENV/bin/wop-langgraph" demo "$@"
echo
echo "wop-langgraph is installed in $PWD/$VENV; to use it: source $VENV/bin/activate"
