#!/usr/bin/env bash
# CI's background builds (.ci/run starts this at the lowest priority right
# after resolving): the ThreadSanitizer and AddressSanitizer trees that
# Scripts/sanitize.sh then finds built. They share two cores with the steps
# in front, which must not wait on them.
#
# No release tree: a clean release build of `outbox` costs about 15 minutes
# of both cores (923 s on an idle machine), which CI's budget cannot carry
# beside three debug-configuration trees (Docs/RELIABILITY.md, "What CI
# runs, and what it costs"). The README's `swift run -c release outbox demo`
# builds it on a newcomer's machine; the benchmarks and the long torture
# profile build it here.
set -euo pipefail
cd "$(dirname "$0")/../.."
SANITIZE_BUILD_ONLY=1 exec Scripts/sanitize.sh
