package trainlog

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"regexp"
	"strconv"
	"strings"

	"github.com/memscan/memscan/internal/input"
)

// Log holds the memory lines of one training log.
type Log struct {
	// Dialect is the framework whose lines dominate: "megatron", "deepspeed" or "torchtitan".
	Dialect string
	// Records are the memory lines in file order.
	Records []Record
	// Theoretical are Megatron's "Theoretical memory footprints" lines (the static estimate it prints).
	Theoretical []Theoretical
	// CapacityBytes is the device capacity torchtitan prints at start-up ("CUDA capacity: ... with X GiB
	// memory"); 0 when absent. DeviceName is the name on that line.
	CapacityBytes int64
	DeviceName    string
	// Lines is the number of lines read; SkippedLines those longer than the line limit.
	Lines        int
	SkippedLines int
	// BadValues counts the memory figures left out because they were not finite, non-negative numbers below
	// 2^62 bytes (nan, inf, 1e308); each is in Warnings up to its limit.
	BadValues int
	Warnings  []string
}

// Record is one memory line. Byte fields are -1 when the line does not carry them. Values printed in MB/GB are
// MiB/GiB (all three frameworks divide by powers of 1024) and are converted to bytes, so a value rounded to 2
// decimals in GiB is only accurate to about 5 MiB.
type Record struct {
	Dialect string
	Line    int   // 1-based line number
	Offset  int64 // byte offset of the line start
	// Rank is from "[Rank N]", "[rankN]:", "[N]" or the launcher prefix; -1 when the line names none.
	Rank int
	// Iteration is from "(after N iterations)", torchtitan's "step: N", or a step/iteration number in
	// DeepSpeed's message line; -1 when unknown.
	Iteration int
	// Label is the free text the framework attached (Megatron's report name, DeepSpeed's message line).
	Label string

	AllocatedBytes    int64
	MaxAllocatedBytes int64
	ReservedBytes     int64
	MaxReservedBytes  int64
	// DeviceUsageBytes is Megatron's "device usage" (torch >= 2.6), i.e. what the driver reports in use.
	DeviceUsageBytes int64
	// CapacityPct is torchtitan's percentage of device capacity; -1 when absent.
	CapacityPct float64
}

// Theoretical is one Megatron theoretical-memory line, in bytes (-1 when a part is not printed).
type Theoretical struct {
	Line                   int
	Rank                   int
	WeightAndOptimizerByte int64
	ActivationBytes        int64
	TotalBytes             int64
}

// ErrLineTooLong is wrapped by the error for a log with no memory line and a line longer than a log line may be.
var ErrLineTooLong = errors.New("line too long")

// Limits for log inputs.
const (
	maxLogLineBytes = 1 << 20
	maxLogRecords   = 1 << 24
	maxLogWarnings  = 20
)

var (
	ansiRe = regexp.MustCompile(`\x1b\[[0-9;?]*[A-Za-z]`)
	// Launcher prefixes: torchrun's "[rank3]:" / "[default3]:" and the Megatron "[Rank 3]" form.
	launcherRankRe = regexp.MustCompile(`^\s*\[(?:rank|default)(\d+)\]:`)
	megatronRe     = regexp.MustCompile(`\[Rank (\d+)\]\s*(.*?)\s*memory \(MB\)\s*\|(.*)$`)
	afterItersRe   = regexp.MustCompile(`after (\d+) iterations?`)
	theoreticalRe  = regexp.MustCompile(`Theoretical memory footprints:\s*(.*)$`)
	mbPairRe       = regexp.MustCompile(`([a-z][a-z ]*?)\s*=\s*([0-9.eE+\-]+)\s*MB`)
	// The value patterns take any number-like word (nan, inf, -1, 1e308 too), so that a memory line with a
	// value memscan cannot use is reported rather than passed over as if it were not a memory line.
	deepspeedRe    = regexp.MustCompile(`MA (\S+) GB\s*\|?\s*Max_MA (\S+) GB\s*\|?\s*CA (\S+) GB\s*\|?\s*Max_CA (\S+) GB`)
	deepspeedRank  = regexp.MustCompile(`^\s*\[(\d+)\]`)
	loggerPrefixRe = regexp.MustCompile(`^(?:\s*\[[^\]]*\])+\s*`)
	stepWordRe     = regexp.MustCompile(`(?i)\b(?:step|iter|iteration)[\s:=#]*(\d+)`)
	titanRe        = regexp.MustCompile(`step:\s*(\d+)\b.*?\bmemory:\s*([^\s(]+)\s*GiB\s*\(\s*([^\s%]+)%\)`)
	titanCapRe     = regexp.MustCompile(`CUDA capacity:\s*(.*?)\s+with\s+([0-9.]+)\s*GiB memory`)
)

// Decode reads memory lines from a training log.
func Decode(ctx context.Context, name string, r io.Reader) (*Log, error) {
	lg := &Log{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), maxLogLineBytes)
	// offset is the byte offset of the unconsumed input; tokStart that of the line the scanner just returned.
	var offset, tokStart int64
	skipping := false
	var firstLong int // the first line too long to read, 0 when none
	var firstLongAt int64
	// The split function discards an over-long line piece by piece instead of failing the whole file, which is
	// what bufio.ScanLines would do.
	//
	// Lines end as Python's universal newlines have them: "\n", "\r\n" or a lone "\r" (old Mac editors, and the
	// progress bars some launchers redraw with "\r"); a log written with "\r" alone is otherwise one line.
	sc.Split(func(data []byte, atEOF bool) (int, []byte, error) {
		if i := bytes.IndexAny(data, "\r\n"); i >= 0 && (data[i] == '\n' || i+1 < len(data) || atEOF || len(data) >= maxLogLineBytes) {
			next := i + 1
			if data[i] == '\r' && next < len(data) && data[next] == '\n' {
				next++
			}
			if skipping {
				skipping = false
				offset += int64(next)
				return next, nil, nil
			}
			tokStart = offset
			offset += int64(next)
			return next, data[:i], nil
		}
		if atEOF && len(data) > 0 {
			if skipping {
				skipping = false
				offset += int64(len(data))
				return len(data), nil, nil
			}
			tokStart = offset
			offset += int64(len(data))
			return len(data), data, nil
		}
		if len(data) >= maxLogLineBytes {
			if !skipping {
				skipping = true
				lg.SkippedLines++
				lg.Lines++ // the skipped line still counts, so later line numbers stay right
				lg.warnf("line %d at byte %d is longer than %d bytes; skipped", lg.Lines, offset, maxLogLineBytes)
				if firstLong == 0 {
					firstLong, firstLongAt = lg.Lines, offset
				}
			}
			offset += int64(len(data))
			return len(data), nil, nil
		}
		return 0, nil, nil
	})
	counts := map[string]int{}
	var prev string // previous non-empty line, the message DeepSpeed prints before its MA line
	for sc.Scan() {
		if lg.Lines%4096 == 0 {
			if err := ctx.Err(); err != nil {
				return nil, fmt.Errorf("%s: %w", name, err)
			}
		}
		raw := sc.Bytes()
		lg.Lines++
		line := string(raw)
		if strings.IndexByte(line, 0x1b) >= 0 {
			line = ansiRe.ReplaceAllString(line, "")
		}
		if rec, ok := parseLogLine(line, prev, lg); ok {
			if len(lg.Records) >= maxLogRecords {
				return nil, &input.Error{File: name, Offset: -1, Field: fmt.Sprintf("line %d", lg.Lines), Msg: fmt.Sprintf("more than %d memory lines", maxLogRecords)}
			}
			rec.Line, rec.Offset = lg.Lines, tokStart
			lg.Records = append(lg.Records, rec)
			counts[rec.Dialect]++
		} else if t, ok := parseTheoretical(line); ok {
			t.Line = lg.Lines
			lg.Theoretical = append(lg.Theoretical, t)
			counts["megatron"]++
		}
		if s := strings.TrimSpace(line); s != "" {
			prev = s
		}
	}
	if err := sc.Err(); err != nil {
		return nil, &input.Error{File: name, Offset: -1, Field: fmt.Sprintf("line %d", lg.Lines+1), Msg: "cannot read", Err: err}
	}
	best := 0
	for _, d := range []string{"megatron", "deepspeed", "torchtitan"} {
		if counts[d] > best {
			lg.Dialect, best = d, counts[d]
		}
	}
	if best == 0 && firstLong > 0 {
		// Say so: a line that could not be read may be why nothing was recognised.
		return nil, &input.Error{File: name, Offset: firstLongAt, Field: fmt.Sprintf("line %d", firstLong), Err: fmt.Errorf("%w, %w", input.ErrUnknownContent, ErrLineTooLong),
			Msg: fmt.Sprintf("longer than %d bytes, the limit for one log line (%d such lines skipped); no Megatron, DeepSpeed or torchtitan memory lines in the other %d", maxLogLineBytes, lg.SkippedLines, lg.Lines-lg.SkippedLines)}
	}
	if best == 0 {
		return nil, &input.Error{File: name, Offset: -1, Msg: fmt.Sprintf("no Megatron, DeepSpeed or torchtitan memory lines in %d lines of text", lg.Lines), Err: input.ErrUnknownContent}
	}
	return lg, nil
}

func (lg *Log) warnf(format string, args ...any) {
	switch {
	case len(lg.Warnings) < maxLogWarnings:
		lg.Warnings = append(lg.Warnings, fmt.Sprintf(format, args...))
	case len(lg.Warnings) == maxLogWarnings:
		lg.Warnings = append(lg.Warnings, "further warnings suppressed")
	}
}

// parseLogLine recognises one memory line of any dialect.
func parseLogLine(line, prev string, lg *Log) (Record, bool) {
	rec := Record{Rank: -1, Iteration: -1, AllocatedBytes: -1, MaxAllocatedBytes: -1, ReservedBytes: -1, MaxReservedBytes: -1, DeviceUsageBytes: -1, CapacityPct: -1}
	if m := launcherRankRe.FindStringSubmatch(line); m != nil {
		rec.Rank = atoiOr(m[1], -1)
	}
	if m := megatronRe.FindStringSubmatch(line); m != nil {
		rec.Dialect = "megatron"
		rec.Rank = atoiOr(m[1], rec.Rank)
		rec.Label = strings.TrimSpace(m[2])
		if it := afterItersRe.FindStringSubmatch(rec.Label); it != nil {
			rec.Iteration = atoiOr(it[1], -1)
		}
		// Fields are "key: value" separated by '|'; old versions say cached, some forks round to 2 decimals.
		for field := range strings.SplitSeq(m[3], "|") {
			k, v, ok := strings.Cut(field, ":")
			if !ok {
				continue
			}
			key := strings.TrimSpace(k)
			switch key {
			case "allocated", "max allocated", "reserved", "cached", "max reserved", "max cached", "device usage":
			default:
				continue
			}
			b, ok := lg.value(strings.TrimSpace(v), 1<<20, "MB", key)
			if !ok {
				continue
			}
			switch key {
			case "allocated":
				rec.AllocatedBytes = b
			case "max allocated":
				rec.MaxAllocatedBytes = b
			case "reserved", "cached":
				rec.ReservedBytes = b
			case "max reserved", "max cached":
				rec.MaxReservedBytes = b
			case "device usage":
				rec.DeviceUsageBytes = b
			}
		}
		return rec, rec.AllocatedBytes >= 0 || rec.ReservedBytes >= 0
	}
	if m := deepspeedRe.FindStringSubmatch(line); m != nil {
		rec.Dialect = "deepspeed"
		rest := launcherRankRe.ReplaceAllString(line, "")
		if r := deepspeedRank.FindStringSubmatch(rest); r != nil {
			rec.Rank = atoiOr(r[1], rec.Rank)
		}
		var ok [4]bool
		rec.AllocatedBytes, ok[0] = lg.value(m[1], 1<<30, "GB", "MA")
		rec.MaxAllocatedBytes, ok[1] = lg.value(m[2], 1<<30, "GB", "Max_MA")
		rec.ReservedBytes, ok[2] = lg.value(m[3], 1<<30, "GB", "CA")
		rec.MaxReservedBytes, ok[3] = lg.value(m[4], 1<<30, "GB", "Max_CA")
		if !(ok[0] || ok[1] || ok[2] || ok[3]) {
			return rec, false
		}
		// The ArcticTraining form puts its message on the same line ("[0] mp: MA ..."); the DeepSpeed form prints
		// it on the line before.
		label := strings.TrimSpace(loggerPrefixRe.ReplaceAllString(line[:strings.Index(line, m[0])], ""))
		label = strings.TrimSuffix(label, ":")
		if label == "" {
			label = strings.TrimSpace(loggerPrefixRe.ReplaceAllString(launcherRankRe.ReplaceAllString(prev, ""), ""))
		}
		rec.Label = label
		if it := stepWordRe.FindStringSubmatch(label); it != nil {
			rec.Iteration = atoiOr(it[1], -1)
		}
		return rec, true
	}
	if m := titanRe.FindStringSubmatch(line); m != nil {
		rec.Dialect = "torchtitan"
		rec.Iteration = atoiOr(m[1], -1)
		b, ok := lg.value(m[2], 1<<30, "GiB", "memory")
		if !ok {
			return rec, false
		}
		// torchtitan's memory number is reserved_bytes.all.peak since the previous log line.
		rec.MaxReservedBytes = b
		if p, err := strconv.ParseFloat(m[3], 64); err == nil {
			rec.CapacityPct = p
		}
		return rec, true
	}
	if m := titanCapRe.FindStringSubmatch(line); m != nil {
		if b, ok := scaled(m[2], 1<<30); ok {
			lg.CapacityBytes, lg.DeviceName = b, m[1]
		}
	}
	return rec, false
}

func parseTheoretical(line string) (Theoretical, bool) {
	m := theoreticalRe.FindStringSubmatch(line)
	if m == nil {
		return Theoretical{}, false
	}
	t := Theoretical{Rank: -1, WeightAndOptimizerByte: -1, ActivationBytes: -1, TotalBytes: -1}
	if r := launcherRankRe.FindStringSubmatch(line); r != nil {
		t.Rank = atoiOr(r[1], -1)
	}
	found := false
	for _, p := range mbPairRe.FindAllStringSubmatch(m[1], -1) {
		b, ok := scaled(p[2], 1<<20)
		if !ok {
			continue
		}
		switch strings.TrimSpace(p[1]) {
		case "weight and optimizer":
			t.WeightAndOptimizerByte, found = b, true
		case "activation":
			t.ActivationBytes, found = b, true
		case "total":
			t.TotalBytes, found = b, true
		}
	}
	return t, found
}

// value parses a memory figure of the line being read (see scaled); one it cannot use (nan, inf, negative,
// past 2^62 bytes, not a number) is left out with a warning naming the line, the field and what was written.
func (lg *Log) value(s string, unit float64, unitName, field string) (int64, bool) {
	b, ok := scaled(s, unit)
	if !ok {
		lg.BadValues++
		lg.warnf("line %d: %s %q %s is not a usable memory figure (a finite, non-negative number below 2^62 bytes); the figure is left out",
			lg.Lines, field, s, unitName)
	}
	return b, ok
}

// scaled parses a non-negative decimal and multiplies it by unit, rounding to whole bytes.
func scaled(s string, unit float64) (int64, bool) {
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || f < 0 || math.IsNaN(f) || f*unit > float64(math.MaxInt64>>1) {
		return -1, false
	}
	return int64(math.Round(f * unit)), true
}

func atoiOr(s string, def int) int {
	n, err := strconv.Atoi(s)
	if err != nil || n < 0 {
		return def
	}
	return n
}

// Format names of the log dialects.
const (
	FormatMegatron   = "megatron-log"
	FormatDeepSpeed  = "deepspeed-log"
	FormatTorchtitan = "torchtitan-log"
)
