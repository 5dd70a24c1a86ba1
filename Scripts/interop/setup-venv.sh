#!/usr/bin/env bash
# Makes the Python virtual environment the interop tests run their servers
# in: .build/pyenv, with the pinned middlewares of requirements.txt from PyPI.
# Safe to run again: pip installs only what is missing. `swift test` runs it
# when the environment is missing (Tests/InteropTests/InteropEnvironment.swift).
#
# Exits 3 when python3 cannot make a virtual environment here (Debian's
# python3-venv missing), 1 when the install fails (PyPI unreachable, say).
set -euo pipefail
cd "$(dirname "$0")/../.."
if ! command -v python3 >/dev/null 2>&1 || ! python3 -c 'import venv, ensurepip' 2>/dev/null; then
    echo "error: python3 cannot make virtual environments here: install python3-venv (Debian/Ubuntu)" >&2
    exit 3
fi
[ -x .build/pyenv/bin/python ] || python3 -m venv .build/pyenv
.build/pyenv/bin/pip install -q --disable-pip-version-check -r Scripts/interop/requirements.txt
.build/pyenv/bin/python -c 'import idempotency_header_middleware, fastapi_idempotency, drf_idempotency, uvicorn, django'
# The tests take the environment as made only with this mark: a venv left
# by a failed install (offline, say) is finished by the next run.
cp Scripts/interop/requirements.txt .build/pyenv/outbox-requirements.txt
echo "interop environment ready: $(pwd)/.build/pyenv"
