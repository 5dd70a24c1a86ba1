#!/usr/bin/env bash
# A drain that retries without stalling: `outbox drain` of 1,000 entries to
# `outbox serve --latency 50ms` with 10 % of writes disturbed by transient
# faults (3.4 % dropped after apply, 3.3 % answered 500, 3.3 % answered 429
# with Retry-After: 1), the drain (8 at once, unscoped entries concurrent)
# killed with kill -9 five times mid-drain, then run to the end. Prints how
# long the last drain took after the last kill, where its time went, what is
# left, and whether every key was applied exactly once (the server's ledger).
#
#   swift build -c release --product outbox
#   bash Benchmarks/scripts/drain-under-kills.sh   # OUTBOX=path: another binary; DRAIN_OPTIONS="...": other drain options
set -euo pipefail
outbox=${OUTBOX:-.build/release/outbox}
work=$(mktemp -d)
trap 'kill "$server" 2>/dev/null || true; rm -rf "$work"' EXIT

"$outbox" enqueue "$work/q" --count 1000 --size 64 --endpoint "POST /messages" > "$work/keys.txt"
"$outbox" serve --port 0 --in-memory-keys --latency 50ms \
    --fault dropAfterApply=0.034 --fault serverError=0.033 --fault tooManyRequests=0.033 --seed 14 \
    > "$work/serve.log" 2>&1 &
server=$!
for _ in $(seq 100); do grep -q "listening on" "$work/serve.log" && break; sleep 0.1; done
url=$(sed -n 's/^listening on \(http[^ ]*\).*/\1/p' "$work/serve.log")
echo "server: $url (latency 50 ms; dropAfterApply 3.4 %, serverError 3.3 %, tooManyRequests 3.3 %)"

drain_options=${DRAIN_OPTIONS:-"--concurrency 8 --unscoped-delivery concurrent"}
for kill in 1 2 3 4 5; do
    "$outbox" drain "$work/q" --base-url "$url" --until-empty --timeout 120 --json $drain_options > "$work/drain-$kill.json" 2>&1 &
    drain=$!
    sleep "0.$((RANDOM % 5 + 3))"  # 0.3–0.7 s: mid-drain
    kill -9 "$drain" 2>/dev/null || true
    wait "$drain" 2>/dev/null || true
    echo "kill -9 #$kill: $(curl -s "$url/ledger" | python3 -c 'import json,sys; print(len(json.load(sys.stdin)["applied"]), "keys applied so far")')"
done
last_kill=$(date +%s.%N)
"$outbox" drain "$work/q" --base-url "$url" --until-empty --timeout 120 --json $drain_options > "$work/final.json" || true
finished=$(date +%s.%N)
echo "final drain: $(cat "$work/final.json")"
echo "seconds from the last kill to the end: $(python3 -c "print(round($finished - $last_kill, 2))")"
curl -s "$url/ledger" > "$work/ledger.json"
python3 - "$work/keys.txt" "$work/ledger.json" <<'PY'
import json, sys
keys = [line.split()[1] for line in open(sys.argv[1]) if line.strip()]
ledger = json.load(open(sys.argv[2]))
applied = ledger["applied"]
once = sum(1 for key in keys if applied.get(key) == 1)
missing = [key for key in keys if key not in applied]
twice = [key for key, count in applied.items() if count > 1]
print(f"keys: {len(keys)}, applied exactly once: {once}, never applied: {len(missing)}, applied more than once: {len(twice)}")
print(f"server: faults {ledger['faults']}, replays {ledger['replays']}, in progress {ledger['inProgress']}, key mismatches {ledger['keyMismatches']}")
sys.exit(0 if once == len(keys) and not twice else 1)
PY
