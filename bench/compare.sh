#!/usr/bin/env bash
# compare.sh — memscan versus Python's bare pickle.load on the same snapshot files, and how memscan scales.
#
# Usage: bench/compare.sh [FILE.pickle ...]
#   With no files it generates a ~120 MB snapshot with memo-shared Python stacks, a ~120 MB training loop (periodic
#   iterations with annotations), and a two-device one with Python+C++ stacks and expandable segments.
# Environment: RUNS (default 3; medians are reported), WORK (scratch directory, default a temp dir), PYTHON
#   (default python3), TASKSET (e.g. "taskset -c 0,1"), SECTIONS (default "files growing ranks summaries").
#
# Sections:
#   files      per file, in rounds (each round runs every command once, so a change of load hits all alike):
#              Python's pickle.load with the collector disabled (the floor of any Python tool) and enabled, memscan's
#              decoder alone, analyze --no-plots, analyze with charts, analyze --summary-only; times as multiples
#              of the gc-disabled load, peak RSS as a multiple of the file
#   growing    analyze --no-plots on traces of 1 M and 4 M events whose live set keeps growing (memscan-gen --grow)
#   ranks      analyze --no-plots --jobs 1 and --jobs 2 over a 16-file rank set
#   summaries  analyze --summary-only over 100 and 1,000 small snapshots: peak RSS (flat) and when the first and
#              last summaries were written (as they finish, not at the end)
set -euo pipefail

here=$(cd "$(dirname "$0")/.." && pwd)
RUNS=${RUNS:-3}
PYTHON=${PYTHON:-python3}
TASKSET=${TASKSET:-}
SECTIONS=${SECTIONS:-files growing ranks summaries}
WORK=${WORK:-$(mktemp -d)}
mkdir -p "$WORK/bin" "$WORK/results"

(cd "$here" && go build -o "$WORK/bin/memscan" ./cmd/memscan && go build -o "$WORK/bin/memscan-gen" ./cmd/memscan-gen &&
	go test -c -o "$WORK/bin/snapshot.test" ./snapshot/)
MEMSCAN="$WORK/bin/memscan"
GEN="$WORK/bin/memscan-gen"

# measure CMD... prints "seconds kilobytes cpu-seconds" of one run (cpu: user + system).
measure() {
	/usr/bin/time -v $TASKSET "$@" >/dev/null 2>"$WORK/err" || true
	local wall rss cpu
	wall=$(grep -F 'Elapsed (wall clock)' "$WORK/err" | awk '{print $NF}')
	rss=$(grep -F 'Maximum resident set size' "$WORK/err" | awk '{print $NF}')
	cpu=$(awk -F: '/User time|System time/ {s += $2} END {print s}' "$WORK/err")
	# h:mm:ss or m:ss.ss -> seconds
	echo "$wall" | awk -F: -v rss="$rss" -v cpu="$cpu" '{ s = 0; for (i = 1; i <= NF; i++) s = s * 60 + $i; printf "%.3f %d %.3f\n", s, rss, cpu }'
}

# median FILE: the median of the first column of FILE and the largest second column, as "seconds kilobytes".
median() {
	sort -g "$1" | awk '{t[NR]=$1; if ($2 > r) r = $2} END {printf "%s %d\n", t[int((NR+1)/2)], r}'
}

# mediancpu FILE: the median of the third column (CPU seconds).
mediancpu() {
	awk '{print $3}' "$1" | sort -g | awk '{t[NR]=$1} END {print t[int((NR+1)/2)]}'
}

echo "machine: $(uname -m), $(nproc) CPUs${TASKSET:+ (pinned: $TASKSET)}, $(awk '/MemTotal/ {printf "%.0f GiB", $2/1048576}' /proc/meminfo); $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'); load average $(cut -d' ' -f1-3 /proc/loadavg)"
echo "medians of $RUNS runs; times also as a multiple of Python's pickle.load with gc disabled, RSS as a multiple of the file"

section() { [[ " $SECTIONS " == *" $1 "* ]]; }

if section files; then
	files=("$@")
	if [ ${#files[@]} -eq 0 ]; then
		[ -f "$WORK/py_shared.pickle" ] || $GEN --size 130MB --stacks python -o "$WORK/py_shared.pickle" >/dev/null
		[ -f "$WORK/training.pickle" ] || $GEN --training 39000 -o "$WORK/training.pickle" >/dev/null
		[ -f "$WORK/all_2dev.pickle" ] || $GEN --size 160MB --stacks all --devices 2 --expandable -o "$WORK/all_2dev.pickle" >/dev/null
		files=("$WORK/py_shared.pickle" "$WORK/training.pickle" "$WORK/all_2dev.pickle")
	fi
	cpus=()
	echo
	printf '| %-18s | %4s | %-16s | %-16s | %-22s | %-26s | %-26s | %-26s |\n' file MB "python gc off" "python gc on" "memscan decode" "analyze --no-plots" "analyze (charts)" "analyze --summary-only"
	printf '|%s|%s|%s|%s|%s|%s|%s|%s|\n' "--------------------" "------" "------------------" "------------------" "------------------------" "----------------------------" "----------------------------" "----------------------------"
	for f in "${files[@]}"; do
		bytes=$(stat -c %s "$f")
		rm -f "$WORK"/m.*
		for ((i = 0; i < RUNS; i++)); do
			measure $PYTHON -c "import gc, pickle; gc.disable(); pickle.load(open('$f', 'rb'))" >>"$WORK/m.pyoff"
			measure $PYTHON -c "import pickle; pickle.load(open('$f', 'rb'))" >>"$WORK/m.pyon"
			MEMSCAN_BENCH_FILE="$f" measure "$WORK/bin/snapshot.test" -test.run XXX -test.bench BenchmarkDecodeFile -test.benchtime 1x >>"$WORK/m.dec"
			measure "$MEMSCAN" analyze --no-plots --quiet --out "$WORK/results" "$f" >>"$WORK/m.np"
			measure "$MEMSCAN" analyze --quiet --out "$WORK/results" "$f" >>"$WORK/m.pl"
			measure "$MEMSCAN" analyze --summary-only --quiet --out "$WORK/results/summaries" "$f" >>"$WORK/m.so"
		done
		read -r po pr < <(median "$WORK/m.pyoff")
		cell() { # seconds kilobytes -> "t s, ratio, RSS"
			awk -v t="$1" -v r="$2" -v b="$bytes" -v p="$po" 'BEGIN {printf "%.2fs %.2f× %.1f×RSS", t, t/p, r*1024/b}'
		}
		printf '| %-18s | %4.0f | %-16s | %-16s | %-22s | %-26s | %-26s | %-26s |\n' "$(basename "$f")" "$(awk -v b="$bytes" 'BEGIN {print b/1e6}')" \
			"$(awk -v t="$po" -v r="$pr" -v b="$bytes" 'BEGIN {printf "%.2fs %.1f×RSS", t, r*1024/b}')" \
			"$(read -r t r < <(median "$WORK/m.pyon"); awk -v t="$t" -v r="$r" -v b="$bytes" 'BEGIN {printf "%.2fs %.1f×RSS", t, r*1024/b}')" \
			"$(read -r t r < <(median "$WORK/m.dec"); awk -v t="$t" -v p="$po" 'BEGIN {printf "%.2fs %.2f×", t, t/p}')" \
			"$(cell $(median "$WORK/m.np"))" "$(cell $(median "$WORK/m.pl"))" "$(cell $(median "$WORK/m.so"))"
		# CPU time (user + system), which a shared machine's load distorts less than wall time, with the same ratios:
		# charts against gc-off and gc-on Python, and --summary-only against the full analysis (the target is half).
		cpus+=("$(awk -v n="$(basename "$f")" -v off="$(mediancpu "$WORK/m.pyoff")" -v on="$(mediancpu "$WORK/m.pyon")" \
			-v dec="$(mediancpu "$WORK/m.dec")" -v np="$(mediancpu "$WORK/m.np")" -v pl="$(mediancpu "$WORK/m.pl")" -v so="$(mediancpu "$WORK/m.so")" \
			'BEGIN {printf "%s: python gc off %.2fs, gc on %.2fs; memscan decode %.2fs, --no-plots %.2fs, charts %.2fs (%.2f× gc off, %.2f× gc on), --summary-only %.2fs (%.2f× the charts run)", n, off, on, dec, np, pl, pl/off, pl/on, so, so/pl}')")
		sowall=$(read -r a _ < <(median "$WORK/m.so"); read -r b _ < <(median "$WORK/m.pl"); awk -v a="$a" -v b="$b" 'BEGIN {printf "%.2f", a/b}')
		cpus+=("  $(basename "$f"): --summary-only takes ${sowall}× the wall time of analyze with charts")
	done
	echo
	echo "CPU seconds (user + system, medians):"
	printf '  %s\n' "${cpus[@]}"
fi

if section growing; then
	echo
	[ -f "$WORK/grow1m.pickle" ] || $GEN --entries 1000000 --grow 0.1 -o "$WORK/grow1m.pickle" >/dev/null
	[ -f "$WORK/grow4m.pickle" ] || $GEN --entries 4000000 --grow 0.1 -o "$WORK/grow4m.pickle" >/dev/null
	rm -f "$WORK"/g.*
	for ((i = 0; i < RUNS; i++)); do
		measure "$MEMSCAN" analyze --no-plots --quiet --out "$WORK/results" "$WORK/grow1m.pickle" >>"$WORK/g.1"
		measure "$MEMSCAN" analyze --no-plots --quiet --out "$WORK/results" "$WORK/grow4m.pickle" >>"$WORK/g.4"
	done
	read -r t1 r1 < <(median "$WORK/g.1")
	read -r t4 r4 < <(median "$WORK/g.4")
	awk -v a="$t1" -v b="$t4" -v ra="$r1" -v rb="$r4" -v fa="$(stat -c %s "$WORK/grow1m.pickle")" -v fb="$(stat -c %s "$WORK/grow4m.pickle")" \
		-v ca="$(mediancpu "$WORK/g.1")" -v cb="$(mediancpu "$WORK/g.4")" \
		'BEGIN {printf "growing trace (--grow 0.1), analyze --no-plots: 1 M events %.2fs (%.1f×RSS, %.2fs CPU), 4 M events %.2fs (%.1f×RSS, %.2fs CPU): %.2f× the time (%.2f× the CPU) for 4× the events\n", a, ra*1024/fa, ca, b, rb*1024/fb, cb, b/a, cb/ca}'
fi

if section ranks; then
	echo
	ranks="$WORK/ranks"
	[ -d "$ranks" ] || $GEN --ranks 16 --stages 4 --entries 150000 --dir "$ranks" 2>/dev/null
	total=$(du -cb "$ranks"/iteration_1/*.pickle | tail -1 | cut -f1)
	rm -f "$WORK"/j.*
	for ((i = 0; i < RUNS; i++)); do
		measure "$MEMSCAN" analyze --no-plots --quiet --jobs 1 --out "$WORK/results" "$ranks" >>"$WORK/j.1"
		measure "$MEMSCAN" analyze --no-plots --quiet --jobs 2 --out "$WORK/results" "$ranks" >>"$WORK/j.2"
	done
	read -r j1 _ < <(median "$WORK/j.1")
	read -r j2 _ < <(median "$WORK/j.2")
	awk -v a="$j1" -v b="$j2" -v t="$total" 'BEGIN {printf "16 files, %.0f MB: --jobs 1 %.2fs (%.0f MB/s), --jobs 2 %.2fs (%.0f MB/s): %.2f× the throughput\n", t/1e6, a, t/1e6/a, b, t/1e6/b, a/b}'
fi

if section summaries; then
	echo
	many="$WORK/many"
	[ -d "$many" ] || $GEN --ranks 1000 --stages 4 --entries 3000 --dir "$many" 2>/dev/null
	few="$WORK/few"
	if [ ! -d "$few" ]; then
		mkdir -p "$few/iteration_1"
		for r in $(seq 0 99); do ln "$many/iteration_1/rank${r}_memory_snapshot.pickle" "$few/iteration_1/" 2>/dev/null ||
			cp "$many/iteration_1/rank${r}_memory_snapshot.pickle" "$few/iteration_1/"; done
	fi
	for set in few many; do
		out="$WORK/summaries_$set"
		rm -rf "$out"
		mkdir -p "$out"
		start=$(date +%s.%N)
		read -r t r < <(measure "$MEMSCAN" analyze --summary-only --quiet --jobs 2 --out "$out" "$WORK/$set")
		n=$(find "$out" -name '*.summary.msgpack' | wc -l)
		# When the first and the last summary appeared, from their modification times.
		read -r first last < <(find "$out" -name '*.summary.msgpack' -printf '%T@\n' | sort -g | awk -v s="$start" 'NR == 1 {f = $1} {l = $1} END {printf "%.2f %.2f\n", f - s, l - s}')
		total=$(find "$WORK/$set" -name '*.pickle' -printf '%s\n' | awk '{s += $1} END {print s}')
		awk -v n="$n" -v t="$t" -v r="$r" -v f="$first" -v l="$last" -v b="$total" \
			'BEGIN {printf "--summary-only --jobs 2 over %d snapshots (%.0f MB): %.2fs, peak RSS %.0f MB; first summary written at %.2fs, last at %.2fs\n", n, b/1e6, t, r/1024, f, l}'
	done
fi
