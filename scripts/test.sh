#!/usr/bin/env bash
# Run the test suite from a fresh machine: creates .venv, installs the project with its dev
# extra, then runs pytest. PostgreSQL tests run when WOP_TEST_POSTGRES_URL is set, else skip.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON="${PYTHON:-python3}"
VENV="${WOP_VENV:-.venv}"
if [ ! -x "$VENV/bin/python" ]; then
  "$PYTHON" -m venv "$VENV"
fi
"$VENV/bin/python" -m pip install --quiet --upgrade pip
"$VENV/bin/python" -m pip install --quiet -e ".[dev]"
exec "$VENV/bin/python" -m pytest "$@"
