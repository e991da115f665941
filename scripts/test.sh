#!/usr/bin/env bash
# Install everything the tests need, then run every check: ruff, mypy, the import
# contracts (lint-imports, pyproject.toml [tool.importlinter]), the house rules
# (scripts/house.py, docs/architecture.md), pytest.
# This is the README's test command; .ci/run calls it. Safe to rerun.
set -euo pipefail
cd "$(dirname "$0")/.."

# Debian tools the tests run for real: cloud-init (`cloud-init schema`) and shellcheck.
if ! command -v shellcheck >/dev/null 2>&1 || ! command -v cloud-init >/dev/null 2>&1; then
  if command -v apt-get >/dev/null 2>&1; then
    SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends \
      shellcheck cloud-init >/dev/null
  else
    echo "shellcheck and cloud-init are required; install them with your package manager" >&2
    exit 2
  fi
fi

PY=${PYTHON:-python3}
[ -x .venv/bin/python ] || "$PY" -m venv .venv
.venv/bin/python -m pip install -q --upgrade pip
.venv/bin/python -m pip install -q -e '.[test]'

.venv/bin/ruff check src tests benchmarks scripts
.venv/bin/ruff format --check src tests benchmarks scripts
.venv/bin/mypy
.venv/bin/mypy --strict scripts/house.py
.venv/bin/lint-imports
.venv/bin/python scripts/house.py
.venv/bin/pytest -n "${PYTEST_WORKERS:-2}" "$@"
