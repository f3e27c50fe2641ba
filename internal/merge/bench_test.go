package merge

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// writeSummaryFiles writes sums as one summary file each under dir and returns their paths.
func writeSummaryFiles(tb testing.TB, dir string, sums []*RankSummary) []string {
	tb.Helper()
	files := make([]string, len(sums))
	for i, s := range sums {
		files[i] = filepath.Join(dir, fmt.Sprintf("iter%d_rank%d.summary.msgpack", s.Iteration, s.Rank))
		f, err := os.Create(files[i])
		if err != nil {
			tb.Fatal(err)
		}
		if err := WriteSummary(f, s); err != nil {
			tb.Fatal(err)
		}
		if err := f.Close(); err != nil {
			tb.Fatal(err)
		}
	}
	return files
}

// BenchmarkMergeFiles merges 1024 summary files (the README's rank set) with the stage split given the world,
// derived from the highest rank, and not asked for: the summaries are decoded once in every case.
func BenchmarkMergeFiles(b *testing.B) {
	const ranks, stages = 1024, 8
	files := writeSummaryFiles(b, b.TempDir(), syntheticSummaries(ranks, stages))
	for _, bc := range []struct {
		name string
		opts Options
	}{
		{"stages_world", Options{Stages: stages, World: ranks}},
		{"stages_no_world", Options{Stages: stages}},
		{"no_stages", Options{}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				res, failures, err := MergeFiles(context.Background(), files, FilesOptions{Options: bc.opts, Jobs: 2, Iterations: AllIterations})
				if err != nil || len(failures) > 0 || res.Ranks != ranks {
					b.Fatalf("err %v, failures %v, %d ranks", err, failures, res.Ranks)
				}
			}
		})
	}
}

// BenchmarkMergeAdd folds 65536 in-memory summaries into one merger and takes the result: the merger's own
// cost, without the file reads of BenchmarkMergeFiles.
func BenchmarkMergeAdd(b *testing.B) {
	sums := syntheticSummaries(1<<16, 8)
	b.ReportAllocs()
	for b.Loop() {
		m := New(Options{})
		for _, s := range sums {
			m.Add(s)
		}
		if err := m.Err(); err != nil {
			b.Fatal(err)
		}
		if res := m.Result(); res.Ranks != len(sums) {
			b.Fatalf("%d ranks", res.Ranks)
		}
	}
}
