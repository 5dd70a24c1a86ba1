#!/usr/bin/env bash
# Makes the Python virtual environment the interop tests run their servers
# in: .build/pyenv, with the pinned middlewares of requirements.txt from PyPI.
# Safe to run again: pip installs only what is missing.
set -euo pipefail
cd "$(dirname "$0")/../.."
if ! python3 -c 'import venv, ensurepip' 2>/dev/null; then
    echo "error: python3 cannot make virtual environments here: install python3-venv (Debian/Ubuntu)" >&2
    exit 1
fi
[ -x .build/pyenv/bin/python ] || python3 -m venv .build/pyenv
.build/pyenv/bin/pip install -q --disable-pip-version-check -r Scripts/interop/requirements.txt
.build/pyenv/bin/python -c 'import idempotency_header_middleware, fastapi_idempotency, drf_idempotency, uvicorn, django'
echo "interop environment ready: $(pwd)/.build/pyenv"
