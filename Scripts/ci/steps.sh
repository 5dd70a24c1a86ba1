# Sourced by .ci/run: `step NAME COMMAND...` runs one step of CI, says when
# it starts and ends, and keeps its wall time; on exit (passed or failed)
# a table of every step's time is printed, so CI's cost is measured on
# every run rather than guessed (Docs/RELIABILITY.md, "What CI runs and
# what it costs"). Steps started with `step_in_background` run beside the
# next ones; `step_wait` collects them.
ci_started=$SECONDS
ci_timings=()
ci_background=()

step() {
    local name="$1" begin=$SECONDS status=0
    shift
    echo "=== [$(date -u +%T)] $name: $*"
    "$@" || status=$?
    ci_timings+=("$(printf '%-44s %6d s  exit %d' "$name" $((SECONDS - begin)) "$status")")
    echo "=== [$(date -u +%T)] $name: exit $status after $((SECONDS - begin)) s"
    return $status
}

# step_in_background NAME COMMAND...: as step, beside what follows; its
# output goes to .build/ci/NAME.log and is printed when it is collected.
step_in_background() {
    local name="$1"
    shift
    mkdir -p .build/ci
    set -m
    ( step "$name" "$@" ) >".build/ci/$name.log" 2>&1 &
    set +m
    ci_background+=("$name:$!")
    echo "=== [$(date -u +%T)] $name: started beside the next steps (.build/ci/$name.log)"
}

# step_stop_background: stops background steps still running (the script
# is ending: a failed step in front, say).
step_stop_background() {
    local entry
    for entry in "${ci_background[@]}"; do kill -- "-${entry##*:}" 2>/dev/null || kill "${entry##*:}" 2>/dev/null || true; done
}

# step_wait: waits for every background step, prints its output, and
# fails if any failed.
step_wait() {
    local entry name pid status failed=0
    for entry in "${ci_background[@]}"; do
        name="${entry%%:*}" pid="${entry##*:}" status=0
        wait "$pid" || status=$?
        cat ".build/ci/$name.log"
        ci_timings+=("$(grep -a -E '^=== .* exit [0-9]+ after [0-9]+ s$' ".build/ci/$name.log" | tail -1 |
            sed -E "s/^=== \[[0-9:]+\] ([^:]+): exit ([0-9]+) after ([0-9]+) s$/\1 (beside) \3 \2/" |
            awk '{ printf "%-44s %6d s  exit %d", $1 " " $2, $3, $4 }')")
        [ "$status" -eq 0 ] || failed=1
    done
    ci_background=()
    return $failed
}

ci_summary() {
    echo
    echo "=== CI steps (wall time; 'beside' steps overlap the ones after them)"
    local line
    for line in "${ci_timings[@]}"; do echo "  $line"; done
    echo "  total: $((SECONDS - ci_started)) s"
}
