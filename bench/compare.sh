#!/usr/bin/env bash
# compare.sh — memscan versus Python's bare pickle.load, side by side on the same snapshot files.
#
# Usage: bench/compare.sh [FILE.pickle ...]
#   With no files it generates three ~130 MB snapshots with memscan-gen (Python stacks shared through the
#   memo, Python+C++ stacks on two devices with expandable segments, and unshared Python stacks), plus a
#   16-file rank set for the --jobs comparison.
# Environment: RUNS (default 3; the median is reported), WORK (scratch directory, default a temp dir),
#   PYTHON (default python3), TASKSET (e.g. "taskset -c 0,1" to pin everything to two cores).
#
# For each file it measures, with /usr/bin/time -v (wall clock and peak RSS):
#   python   python3 -c "import pickle; pickle.load(open(F,'rb'))"  — the floor for every Python tool
#   decode   memscan's decoder alone (the snapshot package benchmark binary, one decode)
#   analyze  memscan analyze --no-plots (decode, full analysis, text/Markdown/JSON/msgpack reports)
#   +plots   memscan analyze with the PNG charts
# and prints times, MB/s, RSS, and the ratios memscan/python (time) and RSS/file size.
set -euo pipefail

here=$(cd "$(dirname "$0")/.." && pwd)
RUNS=${RUNS:-3}
PYTHON=${PYTHON:-python3}
TASKSET=${TASKSET:-}
WORK=${WORK:-$(mktemp -d)}
mkdir -p "$WORK/bin" "$WORK/results"

(cd "$here" && go build -o "$WORK/bin/memscan" ./cmd/memscan && go build -o "$WORK/bin/memscan-gen" ./cmd/memscan-gen &&
	go test -c -o "$WORK/bin/snapshot.test" ./snapshot/)
MEMSCAN="$WORK/bin/memscan"

files=("$@")
if [ ${#files[@]} -eq 0 ]; then
	gen="$WORK/bin/memscan-gen"
	[ -f "$WORK/py_shared.pickle" ] || $gen --size 200MB --stacks python -o "$WORK/py_shared.pickle" >/dev/null
	[ -f "$WORK/all_shared.pickle" ] || $gen --size 300MB --stacks all --devices 2 --expandable -o "$WORK/all_shared.pickle" >/dev/null
	[ -f "$WORK/py_unshared.pickle" ] || $gen --size 150MB --stacks python --unshared -o "$WORK/py_unshared.pickle" >/dev/null
	files=("$WORK/py_shared.pickle" "$WORK/all_shared.pickle" "$WORK/py_unshared.pickle")
fi

# measure CMD... prints "seconds kilobytes" of one run.
measure() {

	/usr/bin/time -v $TASKSET "$@" >/dev/null 2>"$WORK/err" || true
	local wall rss
	wall=$(grep -F 'Elapsed (wall clock)' "$WORK/err" | awk '{print $NF}')
	rss=$(grep -F 'Maximum resident set size' "$WORK/err" | awk '{print $NF}')
	# h:mm:ss or m:ss.ss -> seconds
	echo "$wall" | awk -F: -v rss="$rss" '{ s = 0; for (i = 1; i <= NF; i++) s = s * 60 + $i; printf "%.3f %d\n", s, rss }'
}

# median of RUNS measurements: prints "seconds kilobytes" (median time, max RSS).
median_of() {
	local i times=() rsss=()
	for ((i = 0; i < RUNS; i++)); do
		read -r t r < <(measure "$@")
		times+=("$t")
		rsss+=("$r")
	done
	local t r
	t=$(printf '%s\n' "${times[@]}" | sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}')
	r=$(printf '%s\n' "${rsss[@]}" | sort -g | tail -1)
	echo "$t $r"
}

echo "machine: $(uname -m), $(nproc) CPUs${TASKSET:+ (pinned: $TASKSET)}, $(awk '/MemTotal/ {printf "%.0f GiB", $2/1048576}' /proc/meminfo); $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')"
echo "median of $RUNS runs; ratios: time vs python pickle.load, RSS vs file size"
echo
printf '| %-22s | %7s | %-20s | %-20s | %-26s | %-26s |\n' file MB "python load" "memscan decode" "analyze --no-plots" "analyze (plots)"
printf '|%s|%s|%s|%s|%s|%s|\n' "------------------------" "---------" "----------------------" "----------------------" "----------------------------" "----------------------------"
for f in "${files[@]}"; do
	bytes=$(stat -c %s "$f")
	mb=$(awk -v b="$bytes" 'BEGIN {printf "%.0f", b/1e6}')
	read -r pt pr < <(median_of $PYTHON -c "import pickle; pickle.load(open('$f','rb'))")
	read -r dt dr < <(MEMSCAN_BENCH_FILE="$f" median_of "$WORK/bin/snapshot.test" -test.run XXX -test.bench BenchmarkDecodeFile -test.benchtime 1x)
	read -r at ar < <(median_of "$MEMSCAN" analyze --no-plots --quiet --out "$WORK/results" "$f")
	read -r lt lr < <(median_of "$MEMSCAN" analyze --quiet --out "$WORK/results" "$f")
	cell() { # seconds rss -> "t s, MB/s, RSS×, ratio"
		awk -v t="$1" -v r="$2" -v b="$bytes" -v p="$pt" 'BEGIN {printf "%.2fs %.0fMB/s %.1f×RSS %.2f×py", t, b/1e6/t, r*1024/b, t/p}'
	}
	printf '| %-22s | %7s | %-20s | %-20s | %-26s | %-26s |\n' "$(basename "$f")" "$mb" \
		"$(awk -v t="$pt" -v r="$pr" -v b="$bytes" 'BEGIN {printf "%.2fs %.1f×RSS", t, r*1024/b}')" \
		"$(awk -v t="$dt" -v r="$dr" -v b="$bytes" -v p="$pt" 'BEGIN {printf "%.2fs %.0fMB/s %.2f×py", t, b/1e6/t, t/p}')" \
		"$(cell "$at" "$ar")" "$(cell "$lt" "$lr")"
done

# --jobs 1 versus --jobs 2 over a 16-file rank set.
ranks="$WORK/ranks"
[ -d "$ranks" ] || "$WORK/bin/memscan-gen" --ranks 16 --stages 4 --entries 150000 --dir "$ranks" 2>/dev/null
total=$(du -cb "$ranks"/iteration_1/*.pickle | tail -1 | cut -f1)
read -r j1 _ < <(median_of "$MEMSCAN" analyze --no-plots --quiet --jobs 1 --out "$WORK/results" "$ranks")
read -r j2 _ < <(median_of "$MEMSCAN" analyze --no-plots --quiet --jobs 2 --out "$WORK/results" "$ranks")
echo
awk -v a="$j1" -v b="$j2" -v t="$total" 'BEGIN {printf "16 files, %.0f MB: --jobs 1 %.2fs (%.0f MB/s), --jobs 2 %.2fs (%.0f MB/s): %.2f× the throughput\n", t/1e6, a, t/1e6/a, b, t/1e6/b, a/b}'
