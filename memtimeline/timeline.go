package memtimeline

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"github.com/memscan/memscan/internal/input"
)

// Timeline is a torch.profiler memory timeline (profiler.export_memory_timeline): bytes per category over
// time for one device.
type Timeline struct {
	// Form is "plot" for the [times, sizes] JSON and "raw" for the .raw.json.gz event list.
	Form string
	// Categories are the category names in index order (Categories for files PyTorch writes).
	Categories []string
	// TimesUS holds one time per point in microseconds; pre-existing allocations (t = -1) are placed at the
	// smallest positive time, as PyTorch does.
	TimesUS []int64
	// Bytes[k][i] is the live bytes of category k at point i (running totals, not deltas).
	Bytes [][]int64
	// Events and ActionCounts (indexed by action: 1 preexisting, 2 create, 3 increment_version, 4 destroy)
	// describe the raw form; zero for the plot form.
	Events       int
	ActionCounts [5]int
	// Rank is taken from the file path; -1 when unknown.
	Rank int
	// Warnings are oddities that did not stop decoding (e.g. negative running totals).
	Warnings []string
}

// Categories are torch.profiler's memory categories in the index order its exports use (the key order of
// _CATEGORY_TO_COLORS, which differs from the Category enum values); index 7 is "no category".
var Categories = [...]string{"Parameter", "Optimizer state", "Input", "Temporary", "Activation", "Gradient", "Autograd detail", "Unknown"}

// Raw-event action indexes (the Action enum values).
const (
	ActionPreexisting      = 1
	ActionCreate           = 2
	ActionIncrementVersion = 3
	ActionDestroy          = 4
)

// Points returns the number of points.
func (t *Timeline) Points() int { return len(t.TimesUS) }

// Total returns the sum over categories at point i.
func (t *Timeline) Total(i int) int64 {
	var n int64
	for k := range t.Bytes {
		n += t.Bytes[k][i]
	}
	return n
}

// Limits for timeline inputs.
const (
	maxTimelinePoints = 1 << 23
	maxTimelineWidth  = 64
	// MaxBytes bounds every figure of a timeline, a size or a category's running total (2^53 bytes, 8 PiB, as
	// for snapshot sizes): a point's total over at most 64 categories then stays far inside int64. Values near
	// 2^63 used to wrap the total, and a timeline with such a point reported "peak 1000 B".
	MaxBytes = 1 << 53
)

// DecodeRest decodes a timeline whose top-level '[' and the '[' of its first element have been read.
func DecodeRest(js *input.JSONStream) (*Timeline, error) {
	s := newScanner(js)
	first, err := intsRest(s, "[0]", nil, maxTimelinePoints)
	if err != nil {
		return nil, err
	}
	var tl *Timeline
	if !s.HasMore() {
		// A single element can only be one raw event.
		if len(first) != 4 {
			return nil, s.Errf("", "a memory timeline needs [times, sizes] or a list of [t, action, bytes, category] events; got a single list of %d numbers", len(first))
		}
		if err := s.ExpectDelim("", ']'); err != nil {
			return nil, err
		}
		tl, err = buildRawTimeline(s, [][4]int64{{first[0], first[1], first[2], first[3]}})
	} else {
		if err := s.ExpectDelim("[1]", '['); err != nil {
			return nil, err
		}
		tok, err := s.Token("[1][0]")
		if err != nil {
			return nil, err
		}
		switch v := tok.(type) {
		case json.Delim:
			switch v {
			case '[': // plot form: the second element is the list of rows
				tl, err = decodePlotRows(s, first, true)
			case ']':
				tl, err = decodePlotRows(s, first, false)
			default:
				return nil, s.TypeErr("[1][0]", "a number or a list", tok)
			}
		case json.Number:
			tl, err = decodeRawEvents(s, first, v)
		default:
			return nil, s.TypeErr("[1][0]", "a number or a list", tok)
		}
		if err != nil {
			return nil, err
		}
	}
	if err != nil {
		return nil, err
	}
	if err := s.End(); err != nil {
		return nil, err
	}
	if rank, ok := input.RankFromPath(s.Name()); ok {
		tl.Rank = rank
	} else {
		tl.Rank = -1
	}
	return tl, nil
}

// intsRest reads numbers up to and including the closing ']' of an array whose '[' was consumed.
func intsRest(s *scanner, path string, dst []int64, max int) ([]int64, error) {
	for s.HasMore() {
		if len(dst) >= max {
			return nil, s.Errf(path, "more than %d elements", max)
		}
		v, err := s.Int("")
		if err != nil {
			// The element's path is built only on failure: a raw timeline has millions of numbers.
			return nil, withField(err, fmt.Sprintf("%s[%d]", path, len(dst)))
		}
		dst = append(dst, v)
	}
	return dst, s.ExpectDelim(path, ']')
}

// withField prefixes path to the JSON path of a decode error, for callers that name the element only once
// it has failed.
func withField(err error, path string) error {
	var e *input.Error
	if errors.As(err, &e) {
		e.Field = path + e.Field
	}
	return err
}

// decodePlotRows reads the rows of the plot form. open says whether the first row's '[' was consumed (false
// means the sizes list was empty and its ']' was consumed).
func decodePlotRows(s *scanner, times []int64, open bool) (*Timeline, error) {
	tl := &Timeline{Form: "plot", TimesUS: times}
	width := -1
	var row []int64
	for i := 0; open; i++ {
		if i >= len(times) {
			return nil, s.Errf(fmt.Sprintf("[1][%d]", i), "more size rows than the %d times", len(times))
		}
		// The row's path is built only on failure: a timeline has millions of rows.
		path := func() string { return fmt.Sprintf("[1][%d]", i) }
		var err error
		if i > 0 {
			if err := s.ExpectDelim("", '['); err != nil {
				return nil, withField(err, path())
			}
		}
		if row, err = intsRest(s, "", row[:0], maxTimelineWidth+1); err != nil {
			return nil, withField(err, path())
		}
		if width < 0 {
			// row[0] is the stacking baseline PyTorch always writes as 0; the categories follow.
			if len(row) < 2 {
				return nil, s.Errf(path(), "a size row needs a baseline and at least one category, got %d numbers", len(row))
			}
			width = len(row)
			tl.Categories = timelineCategoryNames(width - 1)
			tl.Bytes = make([][]int64, width-1)
			for k := range tl.Bytes {
				tl.Bytes[k] = make([]int64, 0, len(times))
			}
		} else if len(row) != width {
			return nil, s.Errf(path(), "row has %d numbers, earlier rows have %d", len(row), width)
		}
		for k := 1; k < width; k++ {
			if v := row[k]; v > MaxBytes || v < -MaxBytes {
				return nil, s.Errf(fmt.Sprintf("%s[%d]", path(), k), "%d bytes is beyond the 2^53-byte limit of a memory figure", v)
			}
			tl.Bytes[k-1] = append(tl.Bytes[k-1], row[k])
		}
		if !s.HasMore() {
			break
		}
	}
	if open {
		if err := s.ExpectDelim("[1]", ']'); err != nil {
			return nil, err
		}
	}
	n := 0
	if tl.Bytes != nil {
		n = len(tl.Bytes[0])
	}
	if n != len(times) {
		return nil, s.Errf("[1]", "%d size rows for %d times", n, len(times))
	}
	if n == 0 {
		return nil, s.Errf("", "memory timeline has no points")
	}
	if err := s.ExpectDelim("", ']'); err != nil {
		return nil, err
	}
	tl.Warnings = negativeTotalsWarning(tl)
	return tl, nil
}

func timelineCategoryNames(n int) []string {
	names := make([]string, n)
	for k := range names {
		if k < len(Categories) {
			names[k] = Categories[k]
		} else {
			names[k] = fmt.Sprintf("Category %d", k)
		}
	}
	return names
}

// decodeRawEvents reads the raw form: first is the first event, second the first number of the second.
func decodeRawEvents(s *scanner, first []int64, second json.Number) (*Timeline, error) {
	if len(first) != 4 {
		return nil, s.Errf("[0]", "a raw timeline event has 4 numbers [t_ns, action, bytes, category], got %d", len(first))
	}
	events := [][4]int64{{first[0], first[1], first[2], first[3]}}
	v, err := s.ParseInt("[1][0]", second)
	if err != nil {
		return nil, err
	}
	row, err := intsRest(s, "[1]", []int64{v}, 5)
	if err != nil {
		return nil, err
	}
	for i := 1; ; i++ {
		if len(row) != 4 {
			return nil, s.Errf(fmt.Sprintf("[%d]", i), "a raw timeline event has 4 numbers [t_ns, action, bytes, category], got %d", len(row))
		}
		events = append(events, [4]int64{row[0], row[1], row[2], row[3]})
		if !s.HasMore() {
			break
		}
		if len(events) >= maxTimelinePoints {
			return nil, s.Errf("", "more than %d events", maxTimelinePoints)
		}
		if err := s.ExpectDelim("", '['); err != nil {
			return nil, withField(err, fmt.Sprintf("[%d]", i+1))
		}
		if row, err = intsRest(s, "", row[:0], 5); err != nil {
			return nil, withField(err, fmt.Sprintf("[%d]", i+1))
		}
	}
	if err := s.ExpectDelim("", ']'); err != nil {
		return nil, err
	}
	return buildRawTimeline(s, events)
}

// buildRawTimeline accumulates raw events into points the way PyTorch's plot export does: nanoseconds become
// microseconds, a new point starts whenever the time changes, every point carries the running totals, and the
// pre-existing time -1 becomes the smallest positive time.
func buildRawTimeline(s *scanner, events [][4]int64) (*Timeline, error) {
	tl := &Timeline{Form: "raw", Events: len(events), Categories: timelineCategoryNames(len(Categories))}
	for i, e := range events {
		if e[1] < ActionPreexisting || e[1] > ActionDestroy {
			return nil, &input.Error{File: s.Name(), Offset: -1, Field: fmt.Sprintf("[%d][1]", i), Msg: fmt.Sprintf("unknown action %d (want 1..4)", e[1])}
		}
		if e[3] < 0 || e[3] >= int64(len(Categories)) {
			return nil, &input.Error{File: s.Name(), Offset: -1, Field: fmt.Sprintf("[%d][3]", i), Msg: fmt.Sprintf("unknown category %d (want 0..%d)", e[3], len(Categories)-1)}
		}
		if e[0] < -1 {
			return nil, &input.Error{File: s.Name(), Offset: -1, Field: fmt.Sprintf("[%d][0]", i), Msg: fmt.Sprintf("negative time (%d)", e[0])}
		}
		if e[2] > MaxBytes || e[2] < -MaxBytes {
			return nil, &input.Error{File: s.Name(), Offset: -1, Field: fmt.Sprintf("[%d][2]", i), Msg: fmt.Sprintf("%d bytes is beyond the 2^53-byte limit of a memory figure", e[2])}
		}
		tl.ActionCounts[e[1]]++
	}
	// PyTorch writes events in time order; a stable sort keeps that order and tolerates files that were not.
	slices.SortStableFunc(events, func(a, b [4]int64) int {
		return cmp.Compare(usTime(a[0]), usTime(b[0]))
	})
	tl.Bytes = make([][]int64, len(Categories))
	cur := make([]int64, len(Categories))
	tMin := int64(-1)
	for i, e := range events {
		t := usTime(e[0])
		if t > 0 && (tMin == -1 || t < tMin) {
			tMin = t
		}
		switch {
		case i == 0:
			tl.TimesUS = append(tl.TimesUS, t)
		case t != tl.TimesUS[len(tl.TimesUS)-1]:
			tl.appendPoint(cur) // the previous time's state, after all of its events
			tl.TimesUS = append(tl.TimesUS, t)
		}
		cur[e[3]] += e[2] // both within ±2^53: no overflow
		if v := cur[e[3]]; v > MaxBytes || v < -MaxBytes {
			return nil, &input.Error{File: s.Name(), Offset: -1,
				Msg: fmt.Sprintf("category %s adds up to %d bytes at %d µs, beyond the 2^53-byte limit of a memory figure", Categories[e[3]], v, t)}
		}
	}
	tl.appendPoint(cur)
	for i, t := range tl.TimesUS {
		if t < 0 {
			tl.TimesUS[i] = max(tMin, 0)
		}
	}
	tl.Warnings = negativeTotalsWarning(tl)
	return tl, nil
}

func (t *Timeline) appendPoint(cur []int64) {
	for k, v := range cur {
		t.Bytes[k] = append(t.Bytes[k], v)
	}
}

// usTime converts a raw event time (ns, or -1 for pre-existing) to the plot form's µs, truncating like PyTorch.
func usTime(ns int64) int64 {
	if ns < 0 {
		return -1
	}
	return ns / 1000
}

func negativeTotalsWarning(tl *Timeline) []string {
	var out []string
	for k, col := range tl.Bytes {
		lowest, at := int64(0), -1
		for i, v := range col {
			if v < lowest {
				lowest, at = v, i
			}
		}
		if at >= 0 {
			out = append(out, fmt.Sprintf("category %s goes negative (%d bytes at point %d): the profiler saw frees of memory it never saw allocated", tl.Categories[k], lowest, at))
		}
	}
	return out
}

// Format is the format name of a torch.profiler memory timeline.
const Format = "memory-timeline"
