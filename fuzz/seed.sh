#!/bin/sh
# Seed the fuzz corpora (git-ignored) from the shipped sample traces and test fixtures.
# Run from anywhere; corpora land in fuzz/corpus/<target>/.
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
corpus="$root/fuzz/corpus"
mkdir -p "$corpus/load_file" "$corpus/load_rundir" "$corpus/detect"
n=0
find "$root/sample-traces" "$root/tests/fixtures" -type f | while read -r f; do
    n=$((n + 1))
    name=$(echo "$f" | sed "s|$root/||; s|/|_|g")
    cp "$f" "$corpus/load_file/$name"
    # detect: a leading 0 byte = the probe saw the whole file.
    { printf '\0'; cat "$f"; } > "$corpus/detect/$name"
done
# Run directories: metadata, a NUL byte, then the events (see fuzz_targets/load_rundir.rs).
find "$root/sample-traces" "$root/tests/fixtures" -type d | while read -r d; do
    meta=""
    events=""
    for m in run.json meta.json; do [ -f "$d/$m" ] && meta="$d/$m"; done
    for e in events.jsonl spans.jsonl; do [ -f "$d/$e" ] && events="$d/$e"; done
    [ -n "$meta$events" ] || continue
    name=$(echo "$d" | sed "s|$root/||; s|/|_|g")
    {
        if [ -n "$meta" ]; then cat "$meta"; fi
        printf '\0'
        if [ -n "$events" ]; then cat "$events"; fi
    } > "$corpus/load_rundir/$name"
done
for t in load_file load_rundir detect; do
    echo "$t: $(ls "$corpus/$t" | wc -l) seeds"
done
