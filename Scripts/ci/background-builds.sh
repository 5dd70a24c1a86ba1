#!/usr/bin/env bash
# CI's background builds (.ci/run starts this at the lowest priority right
# after resolving): the ThreadSanitizer and AddressSanitizer trees that
# Scripts/sanitize.sh then finds built, and the release build of `outbox`
# for the README's main command. One after the other: they share two cores
# with the steps in front, which must not wait on them.
set -euo pipefail
cd "$(dirname "$0")/../.."
status=0
SANITIZE_BUILD_ONLY=1 Scripts/sanitize.sh || status=$?
begin=$SECONDS
echo "[$(date +%T)] release-build"
swift build -c release --product outbox >.build/ci/release-build.log 2>&1 || { status=$?; tail -n 60 .build/ci/release-build.log; }
echo "[$(date +%T)] release-build: exit $status after $((SECONDS - begin)) s"
exit $status
