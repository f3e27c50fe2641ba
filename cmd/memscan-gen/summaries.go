package main

import (
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"

	"github.com/memscan/memscan/internal/merge"
	"github.com/memscan/memscan/report"
)

// writeSummaries writes n synthetic rank summaries of one iteration, as memscan analyze --summary-only would
// for a pipeline-parallel job of stages stages, into dir/taskTTTT/ (per to a folder, as one array task of the
// README's recipe summarizes them): rank r of stage s reserves about 40 GiB × (1 + 0.5·(stages−1−s)/stages),
// ±5 %, and one rank in 5,000 is 20 to 80 % above its stage. It is input for measuring memscan merge, not a
// model of any job.
func writeSummaries(dir string, n, per, stages int, seed int64) error {
	if n <= 0 || per <= 0 || stages <= 0 {
		return fmt.Errorf("--summaries, --per-dir and --stages must be ≥ 1")
	}
	rng := rand.New(rand.NewPCG(uint64(seed), 11))
	perStage := (n + stages - 1) / stages
	for r := range n {
		sub := filepath.Join(dir, fmt.Sprintf("task%04d", r/per))
		if r%per == 0 {
			if err := os.MkdirAll(sub, 0o755); err != nil {
				return err
			}
		}
		stage := r / perStage
		res := int64(float64(40<<30) * (1 + 0.5*float64(stages-1-stage)/float64(stages)) * (0.95 + 0.1*rng.Float64()))
		if rng.IntN(5000) == 0 {
			res = int64(float64(res) * (1.2 + 0.6*rng.Float64()))
		}
		alloc := res * 8 / 10
		snap := fmt.Sprintf("dump/memory_snapshot/iteration_10/rank%d_memory_snapshot.pickle", r)
		s := &merge.RankSummary{Kind: merge.SummaryKind, Version: merge.SummaryVersion, File: snap,
			Run: "dump/memory_snapshot/iteration_*/rank*_memory_snapshot.pickle", Rank: r, Iteration: 10, Stage: -1,
			Devices: []int{r % 8}, ReservedBytes: res, AllocatedBytes: alloc, RequestedBytes: alloc - 1<<20,
			InternalFreeBytes: 1 << 20, ExternalFreeBytes: res - alloc, LargestFreeBlockBytes: (res - alloc) / 4,
			PeakBytes: alloc + rng.Int64N(1<<30),
			Categories: []report.CategoryStat{{Name: "activations", Bytes: alloc / 2, Count: 4000}, {Name: "parameters", Bytes: alloc / 4, Count: 300},
				{Name: "optimizer", Bytes: alloc / 8, Count: 600}}}
		path := filepath.Join(sub, fmt.Sprintf("rank%06d.summary.msgpack", r))
		if err := writeBuffered(path, func(w io.Writer) error { return merge.WriteSummary(w, s) }); err != nil {
			return err
		}
	}
	return nil
}
