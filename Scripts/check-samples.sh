#!/usr/bin/env bash
# Checks that every Swift sample in README.md and in the DocC catalogs, and
# every sample marked in Docs/, is, character for character, a file that
# Examples/ compiles. (Docs/ also holds unmarked fragments of a few lines,
# which are not whole programs: only its marked blocks are checked.)
#
# In the Markdown, each ```swift block is announced by the file it shows:
#
#   <!-- sample: Examples/Sources/AppSample/main.swift -->
#   ```swift
#   …the whole file…
#   ```
#
# The compiled files are the truth; the Markdown copies them. Fails (exit 1)
# when a block differs from its file (printing the diff), when a ```swift
# block has no marker (outside Docs/), when a marker names a missing file or
# is not followed by a ```swift block, or when an Examples/Sources/*/main.swift
# is shown nowhere. `--update` rewrites the Markdown blocks from the files instead.
#
# Plain bash, awk and diff: it runs on a fresh Debian before anything is
# installed.
set -euo pipefail
cd "$(dirname "$0")/.."

mode=check
case "${1:-}" in
    "") ;;
    --update) mode=update ;;
    *) echo "usage: $0 [--update]" >&2; exit 2 ;;
esac

documents=(README.md)
while IFS= read -r page; do documents+=("$page"); done < <(find Docs -maxdepth 1 -name '*.md' | sort)
while IFS= read -r page; do documents+=("$page"); done < <(find Sources -path '*.docc/*' -name '*.md' | sort)

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
failed=0
shown=()

for document in "${documents[@]}"; do
    # Splits the document: each marked block goes to $work/N.block, and
    # "N<TAB>line<TAB>path" to $work/index; problems go to $work/problems.
    # In update mode it also writes the document with each block replaced
    # by its file's text.
    rm -f "$work"/*.block "$work/index" "$work/problems" "$work/updated"
    case "$document" in Docs/*) strict=0 ;; *) strict=1 ;; esac
    awk -v work="$work" -v document="$document" -v strict="$strict" '
        function problem(text) { print document ":" NR ": " text > (work "/problems") }
        function copyFile(path,    line) {
            while ((getline line < path) > 0) print line > (work "/updated")
            close(path)
        }
        BEGIN { n = 0; pending = ""; inBlock = 0 }
        {
            if (inBlock) {
                if ($0 == "```") {
                    inBlock = 0
                    if (path != "") {
                        close(block)
                        copyFile(path)
                    }
                    print $0 > (work "/updated")
                } else if (path != "") {
                    print $0 > block
                } else {
                    print $0 > (work "/updated")
                }
                next
            }
            print $0 > (work "/updated")
            if (match($0, /^<!-- sample: [^ ]+ -->$/)) {
                pending = substr($0, 14, length($0) - 17)
                pendingLine = NR
                next
            }
            if ($0 == "```swift") {
                if (pending == "") {
                    if (strict) problem("a ```swift block without a <!-- sample: PATH --> line before it")
                    path = ""
                } else if ((getline probe < pending) < 0) {
                    problem("the sample file " pending " does not exist")
                    path = ""
                } else {
                    close(pending)
                    path = pending
                    n += 1
                    block = work "/" n ".block"
                    printf "" > block
                    print n "\t" NR "\t" path > (work "/index")
                }
                pending = ""
                inBlock = 1
                next
            }
            if (pending != "") {
                problem("<!-- sample: " pending " --> must be followed by a ```swift line")
                pending = ""
            }
        }
        END {
            if (inBlock) problem("a ```swift block that never ends")
            if (pending != "") problem("<!-- sample: " pending " --> at the end of the file")
        }
    ' "$document"

    if [ -s "$work/problems" ]; then
        cat "$work/problems" >&2
        failed=1
    fi
    if [ -f "$work/index" ]; then
        while IFS=$'\t' read -r number line path; do
            shown+=("$path")
            [ "$mode" = check ] || continue
            if ! diff -u --label "$path" --label "$document:$line" "$path" "$work/$number.block" >&2; then
                echo "$document:$line: the sample differs from $path (Scripts/check-samples.sh --update copies the file in)" >&2
                failed=1
            fi
        done < "$work/index"
    fi
    if [ "$mode" = update ] && ! cmp -s "$document" "$work/updated"; then
        cp "$work/updated" "$document"
        echo "updated $document"
    fi
done

for file in Examples/Sources/*/main.swift; do
    found=0
    for path in "${shown[@]}"; do [ "$path" = "$file" ] && found=1; done
    if [ "$found" = 0 ]; then
        echo "$file is compiled but shown in no README, Docs/ or DocC page: show it, or remove it" >&2
        failed=1
    fi
done

if [ "$failed" = 0 ]; then
    echo "samples: ${#shown[@]} Swift block(s) in ${#documents[@]} document(s) match the compiled files in Examples/"
fi
exit "$failed"
