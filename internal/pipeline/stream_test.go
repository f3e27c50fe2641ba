package pipeline

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/memscan/memscan/analyze"
	"github.com/memscan/memscan/internal/gen"
	"github.com/memscan/memscan/report"
)

// rankSet writes n generated snapshots of a rank set into a fresh directory and returns it and the files.
func rankSet(t *testing.T, n int) (string, []string) {
	t.Helper()
	dir := t.TempDir()
	files, err := gen.WriteRankSet(dir, gen.RankSet{Ranks: n, Stages: 2, Base: gen.Config{Seed: 3, Entries: 3000}})
	if err != nil {
		t.Fatal(err)
	}
	return dir, files
}

// TestStream: every input reaches handle once, as Analyze's report of it (the same peak and categories), one call
// at a time and never during an event; a broken input is a failure and the rest still stream.
func TestStream(t *testing.T) {
	dir, files := rankSet(t, 6)
	broken := filepath.Join(dir, "rank9_memory_snapshot.pickle")
	if err := os.WriteFile(broken, []byte("\x80\x04\x95garbage"), 0o644); err != nil {
		t.Fatal(err)
	}
	opts := analyze.Options{SummaryOnly: true}
	full, err := Analyze(context.Background(), Request{Inputs: []string{dir}, Options: opts, Jobs: 2, Rank: -1})
	if err != nil {
		t.Fatal(err)
	}
	byFile := map[string]*report.Report{}
	for _, r := range full.Run.Inputs {
		byFile[r.File] = r
	}
	var busy atomic.Int32 // callbacks running: events and handle must never overlap
	enter := func(what string) {
		if busy.Add(1) != 1 {
			t.Errorf("%s while another callback runs", what)
		}
	}
	var seen []string
	req := Request{Inputs: []string{dir}, Options: opts, Jobs: 2, Rank: -1, Events: Events{
		Failure: func(error) { enter("a failure event"); busy.Add(-1) },
		Done:    func() { enter("a done event"); busy.Add(-1) },
	}}
	res, err := Stream(context.Background(), req, func(r *report.Report) error {
		enter("handle")
		defer busy.Add(-1)
		want := byFile[r.File]
		if want == nil || want.Peak.Bytes != r.Peak.Bytes || !slices.Equal(want.Categories, r.Categories) {
			t.Errorf("%s streamed differently from its analysis", r.File)
		}
		seen = append(seen, r.File)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(seen)
	want := slices.Clone(files)
	slices.Sort(want)
	if !slices.Equal(seen, want) {
		t.Errorf("streamed %v, want %v", seen, want)
	}
	if res.Total != 7 || len(res.Failures) != 1 || res.Failures[0].File != broken {
		t.Errorf("total %d, failures %+v; want 7 and the broken file", res.Total, res.Failures)
	}
}

// TestStreamStopsOnHandleError: an error of handle stops the batch and is returned.
func TestStreamStopsOnHandleError(t *testing.T) {
	dir, _ := rankSet(t, 4)
	boom := errors.New("disk full")
	calls := 0
	_, err := Stream(context.Background(), Request{Inputs: []string{dir}, Options: analyze.Options{SummaryOnly: true}, Jobs: 1, Rank: -1},
		func(*report.Report) error { calls++; return boom })
	if !errors.Is(err, boom) || calls != 1 {
		t.Errorf("Stream = %v after %d calls, want the handle's error after 1", err, calls)
	}
	_, err = Stream(context.Background(), Request{Inputs: []string{filepath.Join(dir, "none")}, Jobs: 1, Rank: -1},
		func(*report.Report) error { return nil })
	var none *NothingAnalyzedError
	if !errors.As(err, &none) || !strings.Contains(err.Error(), "none of the 1") {
		t.Errorf("Stream of nothing = %v, want a NothingAnalyzedError", err)
	}
}
