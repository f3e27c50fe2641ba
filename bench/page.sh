#!/usr/bin/env bash
# page.sh — size and load time of memscan's interactive page (index.html) in headless Chromium.
#
# Usage: bench/page.sh [SNAPSHOT ...]
#   With no files it generates a 1.5M-event snapshot (about 120 MB, Python stacks) with memscan-gen.
#   For each snapshot it runs memscan analyze (charts included, as users run it) and loads the run's
#   index.html RUNS times in a fresh headless Chromium (bench/pageload), reporting the page's size, the median
#   time from navigation until every timeline in view is drawn, the share of it spent in the page's script, the
#   renderer's CPU time over it (steady when other jobs load the machine, unlike the wall time), and any
#   request the page made beyond itself or script error it raised (both must be 0).
# Environment: RUNS (default 3), WORK (scratch directory, default a temp dir), ENTRIES (default 1500000).
# Needs Debian's chromium (apt-get install chromium); MEMSCAN_CHROMIUM names another binary.
set -euo pipefail

here=$(cd "$(dirname "$0")/.." && pwd)
RUNS=${RUNS:-3}
ENTRIES=${ENTRIES:-1500000}
WORK=${WORK:-$(mktemp -d)}
mkdir -p "$WORK/bin" "$WORK/results"
(cd "$here" && go build -o "$WORK/bin/memscan" ./cmd/memscan && go build -o "$WORK/bin/memscan-gen" ./cmd/memscan-gen &&
	go build -o "$WORK/bin/pageload" ./bench/pageload)

files=("$@")
if [ ${#files[@]} -eq 0 ]; then
	big="$WORK/gen_${ENTRIES}.pickle"
	[ -f "$big" ] || "$WORK/bin/memscan-gen" --entries "$ENTRIES" --stacks python -o "$big" >/dev/null
	files=("$big")
fi

echo "machine: $(nproc) CPUs, load average $(cut -d" " -f1-3 /proc/loadavg), $(awk '/MemTotal/ {printf "%.0f GiB", $2/1048576}' /proc/meminfo); $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'); $(${MEMSCAN_CHROMIUM:-chromium} --version 2>/dev/null || echo chromium)"
for f in "${files[@]}"; do
	name=$(basename "$f")
	"$WORK/bin/memscan" analyze --quiet --out "$WORK/results" --name "page" "$f"
	dir=$(readlink -f "$WORK/results/latest")
	out=$("$WORK/bin/pageload" -runs "$RUNS" "$dir/index.html")
	printf '%s (%s MB): %s\n' "$name" "$(awk -v b="$(stat -c %s "$f")" 'BEGIN {printf "%.1f", b/1e6}')" "${out%%$'\n'*}"
done
