package merge

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/vmihailenco/msgpack/v5"

	"github.com/memscan/memscan/report"
)

// summaryMap is a valid rank summary as a map, for tests to break one field at a time.
func summaryMap(rank int) map[string]any {
	return map[string]any{
		"kind": SummaryKind, "version": SummaryVersion, "file": fmt.Sprintf("iteration_1/rank%d_memory_snapshot.pickle", rank),
		"rank": rank, "iteration": 1, "stage": -1, "devices": []int{0},
		"reserved_bytes": 8 << 30, "allocated_bytes": 6 << 30, "requested_bytes": 5 << 30, "internal_free_bytes": 1 << 30,
		"external_free_bytes": 2 << 30, "largest_free_block_bytes": 1 << 30, "peak_bytes": 7 << 30, "ooms": 0,
		"categories": []map[string]any{{"name": "activations", "bytes": 3 << 30, "count": 100}},
	}
}

// encode writes v as msgpack with sorted keys.
func encode(t testing.TB, v any) []byte {
	t.Helper()
	var buf bytes.Buffer
	enc := msgpack.NewEncoder(&buf)
	enc.SetSortMapKeys(true)
	if err := enc.Encode(v); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// with is summaryMap(0) with fields set (a nil value removes the field).
func with(fields map[string]any) map[string]any {
	m := summaryMap(0)
	for k, v := range fields {
		if v == nil {
			delete(m, k)
		} else {
			m[k] = v
		}
	}
	return m
}

// TestDecodeHostileSummaries: every file memscan could not have written fails with one message naming the field
// or byte and what is wrong. Before, nested arrays crashed merge with a stack overflow, a cut-short summary said
// "unexpected EOF", and the rest were merged as numbers: negative and inconsistent bytes, wrapping counts,
// rank 2^63−1, an empty report input as rank 0, a summary without a rank as rank 0.
func TestDecodeHostileSummaries(t *testing.T) {
	good := encode(t, summaryMap(0))
	// An unknown field holding 10 MB of nested one-element arrays: the decoder skips unknown fields by recursion.
	nested := encode(t, with(map[string]any{"x": msgpack.RawMessage(append(bytes.Repeat([]byte{0x91}, 10<<20), 0xc0))}))
	tests := []struct {
		name string
		data []byte
		want string
	}{
		{"nested arrays in a field", nested, "nested deeper than 32 levels"},
		{"nested arrays alone", bytes.Repeat([]byte{0x91}, 10<<20), "byte 32: nested deeper than 32 levels"},
		{"cut short", good[:len(good)/2], "cut short: a string of"},
		{"cut in the last value", good[:len(good)-1], "cut short"},
		{"empty file", nil, "empty file"},
		{"not a map", encode(t, []int{1, 2}), "not a msgpack map"},
		{"trailing garbage", append(slicesClone(good), 0x01), "the value at byte " + fmt.Sprint(len(good)) + ": not a msgpack map"},
		{"no kind", encode(t, map[string]any{"rank": 1}), "no kind"},
		{"unknown kind", encode(t, with(map[string]any{"kind": "memscan-something"})), `unknown kind "memscan-something"`},
		{"newer version", encode(t, with(map[string]any{"version": 2})), "version: 2 is not a summary version"},
		{"no rank", encode(t, with(map[string]any{"rank": nil})), "rank: missing"},
		{"no file", encode(t, with(map[string]any{"file": nil})), "file: 0 bytes"},
		{"rank 2^63−1", encode(t, with(map[string]any{"rank": math.MaxInt64})), "rank: 9223372036854775807: must be −1 (unknown) or 0 to 1073741824"},
		{"rank −2", encode(t, with(map[string]any{"rank": -2})), "rank: -2: must be"},
		{"negative reserved", encode(t, with(map[string]any{"reserved_bytes": -(1 << 60)})), "reserved_bytes: -1152921504606846976: a rank's byte count must be 0 to 17592186044416"},
		{"reserved 2^63−1", encode(t, with(map[string]any{"reserved_bytes": math.MaxInt64})), "reserved_bytes: 9223372036854775807"},
		{"allocated above reserved", encode(t, with(map[string]any{"allocated_bytes": 9 << 30})), "allocated_bytes: 9663676416 is more than reserved_bytes 8589934592"},
		{"requested above allocated", encode(t, with(map[string]any{"requested_bytes": 7 << 30})), "requested_bytes: 7516192768 is more than allocated_bytes"},
		{"internal free above allocated", encode(t, with(map[string]any{"internal_free_bytes": 7 << 30})), "internal_free_bytes: 7516192768 is more than allocated_bytes"},
		{"external free above reserved", encode(t, with(map[string]any{"external_free_bytes": 9 << 30})), "external_free_bytes: 9663676416 is more than reserved_bytes"},
		{"largest block above free", encode(t, with(map[string]any{"largest_free_block_bytes": 3 << 30})), "largest_free_block_bytes: 3221225472 is more than external_free_bytes"},
		{"negative ooms", encode(t, with(map[string]any{"ooms": -1})), "ooms: -1: a rank's count"},
		{"huge ooms", encode(t, with(map[string]any{"ooms": 1 << 40})), "ooms: 1099511627776: a rank's count"},
		{"category count that wraps", encode(t, with(map[string]any{"categories": []map[string]any{{"name": "x", "bytes": 1, "count": 1 << 62}}})), "categories[0].count: 4611686018427387904: must be 0 to 1099511627776"},
		{"negative category", encode(t, with(map[string]any{"categories": []map[string]any{{"name": "x", "bytes": -5, "count": 1}}})), "categories[0].bytes: -5"},
		{"unnamed category", encode(t, with(map[string]any{"categories": []map[string]any{{"bytes": 5, "count": 1}}})), "categories[0].name: 0 bytes"},
		{"too many categories", encode(t, with(map[string]any{"categories": make([]report.CategoryStat, 65)})), "categories: 65 entries: a summary keeps at most 64"},
		{"bad device", encode(t, with(map[string]any{"devices": []int{-3}})), "devices[0]: -3 is not a device index"},
		{"a string for a number", encode(t, with(map[string]any{"reserved_bytes": "lots"})), "decoding rank summary"},
		{"empty report input", encode(t, map[string]any{"version": 1, "inputs": []map[string]any{{}}}), "report: inputs[0]: not an analyzed input: it names no file or format"},
		{"report of another tool", encode(t, map[string]any{"version": 1, "tool": "other", "inputs": []map[string]any{{"file": "a.pickle", "format": "pickle-v4"}}}), `report: field tool: "other" is not a memscan report`},
		{"report input with negative bytes", encode(t, map[string]any{"version": 1, "tool": "memscan 0.1.0", "inputs": []map[string]any{{"file": "rank0.pickle", "format": "pickle-v4", "rank": 0, "iteration": -1, "reserved_bytes": -1}}}),
			"report: inputs[0]: rank0.pickle: reserved_bytes: -1"},
		{"cross-rank report version 1", encode(t, map[string]any{"kind": CrossRankKind, "version": 1, "rows": []map[string]any{}}), "cross-rank report version 1: this memscan merges version 2"},
		{"cross-rank row without a rank", encode(t, map[string]any{"kind": CrossRankKind, "version": CrossRankVersion, "rows": []map[string]any{{"file": "a.pickle", "iteration": 1, "summary_stage": -1}}}),
			"cross-rank report: rows[0]: rank: missing"},
		{"cross-rank row with negative bytes", encode(t, map[string]any{"kind": CrossRankKind, "version": CrossRankVersion, "rows": []map[string]any{{"file": "a.pickle", "rank": 0, "iteration": 1, "summary_stage": -1, "peak_bytes": -1}}}),
			"cross-rank report: rows[0]: peak_bytes: -1"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := DecodeSummaries("s.msgpack", tc.data, ReadOptions{})
			if err == nil || !strings.HasPrefix(err.Error(), "s.msgpack: ") || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err = %v, want s.msgpack: …%s…", err, tc.want)
			}
		})
	}
	if _, err := DecodeSummaries("s.msgpack", good, ReadOptions{}); err != nil {
		t.Errorf("the valid summary the cases break: %v", err)
	}
}

func slicesClone(b []byte) []byte { return append([]byte(nil), b...) }

// TestConcatenatedSummaries: a file of summaries written one after the other is read whole (only the first used
// to be), each summary named by its byte in the file; with a report.msgpack and a cross-rank report after them.
func TestConcatenatedSummaries(t *testing.T) {
	var data []byte
	var offsets []int
	for r := range 3 {
		offsets = append(offsets, len(data))
		data = append(data, encode(t, summaryMap(r))...)
	}
	run := &report.Run{Version: report.ReportVersion, Tool: "memscan test", Inputs: []*report.Report{{Header: report.Header{File: "iteration_1/rank3.pickle", Format: "pickle-v4", Rank: 3, Iteration: 1},
		Part: &report.SnapshotReport{Totals: report.Totals{ReservedBytes: 4 << 30, AllocatedBytes: 1 << 30}}}}}
	data = append(data, encode(t, run)...)
	m := New(Options{})
	m.Add(mustSummary(t, summaryMap(4)))
	data = append(data, encode(t, m.Result())...)

	c, err := DecodeSummaries("all.msgpack", data, ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Summaries) != 4 || len(c.Merged) != 1 || len(c.Merged[0].Rows) != 1 || c.Merged[0].Rows[0].Rank != 4 {
		t.Fatalf("%d summaries, %d cross-rank reports", len(c.Summaries), len(c.Merged))
	}
	for r, s := range c.Summaries[:3] {
		want := "all.msgpack"
		if offsets[r] > 0 {
			want = fmt.Sprintf("all.msgpack (byte %d)", offsets[r])
		}
		if s.Rank != r || s.Source != want {
			t.Errorf("summary %d: rank %d from %q, want %q", r, s.Rank, s.Source, want)
		}
	}
	if s := c.Summaries[3]; s.Rank != 3 || s.ReservedBytes != 4<<30 {
		t.Errorf("the report's input: %+v", s)
	}
}

// mustSummary decodes a summary map.
func mustSummary(t testing.TB, m map[string]any) *RankSummary {
	t.Helper()
	c, err := DecodeSummaries("test", encode(t, m), ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return c.Summaries[0]
}

// TestMergeFilesBadSummaryFailsAlone: among 100 summary files, the one claiming 2^63−1 reserved bytes fails
// alone (it used to end the merge with exit 2), and a summary of rank 2^63−1 with stages and no world is
// refused instead of dividing by zero; the others merge to exact sums.
func TestMergeFilesBadSummaryFailsAlone(t *testing.T) {
	dir := t.TempDir()
	var files []string
	var want int64
	for r := range 100 {
		m := summaryMap(r)
		switch r {
		case 17:
			m["reserved_bytes"] = math.MaxInt64
		case 18:
			m["rank"] = math.MaxInt64
		default:
			want += 8 << 30
		}
		p := filepath.Join(dir, fmt.Sprintf("r%03d.summary.msgpack", r))
		if err := os.WriteFile(p, encode(t, m), 0o644); err != nil {
			t.Fatal(err)
		}
		files = append(files, p)
	}
	for _, jobs := range []int{1, 4} {
		res, failures, err := MergeFiles(context.Background(), files, FilesOptions{Options: Options{Stages: 4}, Jobs: jobs, Iterations: AllIterations})
		if err != nil {
			t.Fatal(err)
		}
		if len(failures) != 2 || !strings.Contains(failures[0].Error(), "r017.summary.msgpack: rank summary: reserved_bytes") ||
			!strings.Contains(failures[1].Error(), "r018.summary.msgpack: rank summary: rank: 9223372036854775807") {
			t.Fatalf("failures %v", failures)
		}
		if res.Ranks != 98 || res.Reserved.Sum != want || res.RankSet.MissingRanks != 2 {
			t.Errorf("%d ranks, reserved %d (want %d), missing %+v", res.Ranks, res.Reserved.Sum, want, res.RankSet.Missing)
		}
	}
}

// TestRankStageNoDivideByZero: the stage split never divides by zero, whatever a merger is given: a rank of
// 2^63−1 made the derived world wrap to a negative number and the split per stage zero.
func TestRankStageNoDivideByZero(t *testing.T) {
	for _, tc := range []struct{ rank, stages, world int }{{math.MaxInt64, 4, 0}, {math.MaxInt64, 4, math.MinInt64}, {0, 4, 0}, {5, 1, 1}} {
		_ = rankStage(tc.rank, tc.stages, tc.world)
	}
	m := New(Options{Stages: 4})
	m.Add(&RankSummary{Kind: SummaryKind, Version: SummaryVersion, File: "x", Rank: math.MaxInt64, Stage: -1})
	if err := m.Err(); err != nil {
		t.Fatal(err)
	}
	_ = m.Result()
}

// TestMergeFilesWorldChecked: with --world, a rank at or past it fails its file alone.
func TestMergeFilesWorldChecked(t *testing.T) {
	dir := t.TempDir()
	var files []string
	for _, r := range []int{0, 1, 8} {
		p := filepath.Join(dir, fmt.Sprintf("r%d.summary.msgpack", r))
		if err := os.WriteFile(p, encode(t, summaryMap(r)), 0o644); err != nil {
			t.Fatal(err)
		}
		files = append(files, p)
	}
	res, failures, err := MergeFiles(context.Background(), files, FilesOptions{Options: Options{Stages: 2, World: 8}, Jobs: 1, Iterations: AllIterations})
	if err != nil || len(failures) != 1 || !strings.Contains(failures[0].Error(), "rank 8 (iteration_1/rank8_memory_snapshot.pickle) is outside --world 8 (ranks 0 to 7)") {
		t.Fatalf("err %v, failures %v", err, failures)
	}
	if res.Ranks != 2 || res.RankSet.MissingRanks != 6 {
		t.Errorf("%d ranks, %d missing", res.Ranks, res.RankSet.MissingRanks)
	}
}

// FuzzDecodeSummaries: whatever the bytes, decoding returns summaries or an error naming the file, never a
// panic or a stack overflow; every summary it returns passes Check, and merging them neither panics nor wraps.
// The corpus in testdata/fuzz holds the hostile cases above and what fuzzing found.
func FuzzDecodeSummaries(f *testing.F) {
	f.Add(encode(f, summaryMap(3)))
	f.Add(append(encode(f, summaryMap(0)), encode(f, summaryMap(1))...))
	f.Add(encode(f, map[string]any{"version": 1, "tool": "memscan 0.1.0", "inputs": []map[string]any{{"file": "rank0.pickle", "format": "pickle-v4", "rank": 0, "iteration": 1, "reserved_bytes": 10}}}))
	m := New(Options{})
	m.Add(mustSummary(f, summaryMap(2)))
	f.Add(encode(f, m.Result()))
	f.Add(bytes.Repeat([]byte{0x91}, 100))
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := DecodeSummaries("fuzz.msgpack", data, ReadOptions{RunOf: func(p string) string { return p }})
		if err != nil {
			if !strings.HasPrefix(err.Error(), "fuzz.msgpack: ") {
				t.Fatalf("error does not name the file: %v", err)
			}
			return
		}
		m := New(Options{Stages: 3})
		for _, s := range c.Summaries {
			if err := s.Check(); err != nil {
				t.Fatalf("returned an invalid summary: %v", err)
			}
			m.Add(s)
		}
		for _, g := range c.Merged {
			for _, s := range g.Rows {
				m.Add(s)
			}
			m.AddCategories("fuzz.msgpack", g.Categories)
		}
		if m.Err() == nil {
			res := m.Result()
			if res.Reserved.Sum < 0 || res.OOMs < 0 {
				t.Fatalf("negative sums: %+v", res.Reserved)
			}
			for _, cs := range res.Categories {
				if cs.Bytes < 0 || cs.Count < 0 {
					t.Fatalf("category %+v wrapped", cs)
				}
			}
		}
	})
}
