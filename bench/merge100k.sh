#!/usr/bin/env bash
# merge100k.sh — the README's recipe for 100,000 ranks, timed: rank summaries in task folders of PER, one
# memscan merge per folder (what each array task or pod runs after summarizing its ranks), then the final merge
# of those cross-rank reports; and, to compare, one flat merge of every summary through --files-from.
#
# Usage: bench/merge100k.sh
# Environment: N (ranks, default 100000), PER (ranks per task, default 100), STAGES (default 8),
#   WORK (scratch directory, default a temp dir; put it on the file system you mean to measure), JOBS (merge
#   --jobs, default the CPUs), KEEP=1 keeps WORK, REUSE=1 reuses the summaries and task reports a kept WORK holds.
#
# Each step is measured with /usr/bin/time (wall clock, peak RSS). The summaries are synthetic (memscan-gen
# --summaries): summarizing real snapshots costs what memscan analyze --summary-only costs per file, in the
# array tasks, and is not part of the merge. The script checks that the hierarchical and the flat merge print the
# same report.
set -euo pipefail

here=$(cd "$(dirname "$0")/.." && pwd)
N=${N:-100000}
PER=${PER:-100}
STAGES=${STAGES:-8}
JOBS=${JOBS:-$(nproc)}
WORK=${WORK:-$(mktemp -d)}
mkdir -p "$WORK/bin"
[ "${KEEP:-}" = 1 ] || trap 'rm -rf "$WORK"' EXIT

(cd "$here" && go build -o "$WORK/bin/memscan" ./cmd/memscan && go build -o "$WORK/bin/memscan-gen" ./cmd/memscan-gen)
M="$WORK/bin/memscan"

# measure LABEL CMD... runs CMD once, its stdout into $WORK/out, and prints its wall time, CPU time (user +
# system: what a busy machine stretches the wall time from) and peak RSS.
measure() {
	local label=$1
	shift
	/usr/bin/time -f "%e %U %S %M" -o "$WORK/time" "$@" >"$WORK/out" 2>/dev/null
	read -r secs user sys kb <"$WORK/time"
	printf '%-44s %8.2f s %8.2f s CPU %8.1f MB\n' "$label" "$secs" "$(echo "$user + $sys" | bc -l)" "$(echo "$kb / 1024" | bc -l)"
}

if [ "${REUSE:-}" != 1 ] || [ ! -d "$WORK/summaries" ]; then
	start=$(date +%s.%N)
	"$WORK/bin/memscan-gen" --summaries "$N" --per-dir "$PER" --stages "$STAGES" --dir "$WORK/summaries" 2>/dev/null
	printf '%-44s %8.2f s\n' "write $N synthetic summaries" "$(echo "$(date +%s.%N) - $start" | bc -l)"
fi
du -sh "$WORK/summaries" | awk '{print "summaries on disk: " $1}'

# Per task: one merge of its folder into a run directory of the shared results root.
tasks=("$WORK"/summaries/task*)
if [ "${REUSE:-}" != 1 ] || [ ! -d "$WORK/merged" ]; then
	start=$(date +%s.%N)
	maxkb=0 cpu=0
	for d in "${tasks[@]}"; do
		/usr/bin/time -f "%e %U %S %M" -o "$WORK/time" "$M" merge --jobs "$JOBS" --out "$WORK/merged" --name "$(basename "$d")" "$d" >/dev/null 2>&1
		read -r _ user sys kb <"$WORK/time"
		[ "$kb" -gt "$maxkb" ] && maxkb=$kb
		cpu=$(echo "$cpu + $user + $sys" | bc -l)
	done
	total=$(echo "$(date +%s.%N) - $start" | bc -l)
	printf '%-44s %8.2f s %8.2f s CPU %8.1f MB peak (%.3f s, %.3f s CPU per task)\n' "${#tasks[@]} task merges of $PER, one after another" \
		"$total" "$cpu" "$(echo "$maxkb / 1024" | bc -l)" "$(echo "$total / ${#tasks[@]}" | bc -l)" "$(echo "$cpu / ${#tasks[@]}" | bc -l)"
fi
du -sh "$WORK/merged" | awk '{print "task reports on disk: " $1}'

# The final merge as the recipe runs it: the run directory written (text, JSON and msgpack of every row), the
# text report on stdout.
rm -rf "$WORK/final" "$WORK/flat"
measure "final merge of ${#tasks[@]} task reports" "$M" merge --jobs "$JOBS" --stages "$STAGES" --world "$N" --out "$WORK/final" "$WORK/merged"
find "$WORK/summaries" -name '*.summary.msgpack' | sort >"$WORK/list"
measure "flat merge of $N summaries (--files-from)" "$M" merge --jobs "$JOBS" --stages "$STAGES" --world "$N" --out "$WORK/flat" --files-from "$WORK/list"
measure "  the same, --no-files (text on stdout only)" "$M" merge --jobs "$JOBS" --stages "$STAGES" --world "$N" --no-files --files-from "$WORK/list"
cp "$WORK/final/latest/cross_rank.json" "$WORK/tree.json"
cp "$WORK/flat/latest/cross_rank.json" "$WORK/flat.json"

if cmp -s "$WORK/tree.json" "$WORK/flat.json"; then
	echo "hierarchical and flat merge: identical reports ($(wc -c <"$WORK/flat.json") bytes of JSON)"
else
	echo "hierarchical and flat merge DIFFER: see $WORK/tree.json and $WORK/flat.json" >&2
	KEEP=1
	trap - EXIT
	exit 1
fi
