package gen

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
)

// RankSet describes the snapshots of one dump of a pipeline-parallel job: Ranks files, the ranks split evenly
// over Stages pipeline stages. Earlier stages keep more activations alive (1F1B holds up to Stages micro-batches
// on the first stage and one on the last), so their snapshots are larger and hold more memory.
type RankSet struct {
	Ranks  int
	Stages int
	Base   Config // per-rank settings; Entries is the first stage's trace length
}

// StageOf returns the pipeline stage of rank r.
func (rs RankSet) StageOf(r int) int {
	st := max(1, rs.Stages)
	per := max(1, (rs.Ranks+st-1)/st)
	return min(r/per, st-1)
}

// RankConfig returns the configuration of rank r.
func (rs RankSet) RankConfig(r int) Config {
	c := rs.Base.withDefaults()
	st := max(1, rs.Stages)
	stage := rs.StageOf(r)
	// In-flight micro-batches on stage s under 1F1B: Stages - s.
	scale := float64(st-stage) / float64(st)
	c.LiveScale = 0.5 + scale
	c.Entries = max(200, int(float64(c.Entries)*(0.4+0.6*scale)))
	c.TargetBytes = 0
	c.Seed = rs.Base.Seed*1_000_003 + int64(r)
	c.Name = fmt.Sprintf("rank%d", r)
	return c
}

// RankPath is where WriteRankSet puts rank r, in torchtitan's layout.
func RankPath(dir string, r int) string {
	return filepath.Join(dir, "iteration_1", fmt.Sprintf("rank%d_memory_snapshot.pickle", r))
}

// WriteRankSet writes every rank's snapshot under dir and returns the paths.
func WriteRankSet(dir string, rs RankSet) ([]string, error) {
	if rs.Ranks <= 0 {
		return nil, fmt.Errorf("rank set of %d ranks", rs.Ranks)
	}
	if err := os.MkdirAll(filepath.Join(dir, "iteration_1"), 0o755); err != nil {
		return nil, err
	}
	var paths []string
	for r := range rs.Ranks {
		p := RankPath(dir, r)
		if err := writeFile(p, rs.RankConfig(r)); err != nil {
			return paths, err
		}
		paths = append(paths, p)
	}
	return paths, nil
}

func writeFile(path string, cfg Config) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	bw := bufio.NewWriterSize(f, 1<<20)
	_, err = Write(bw, cfg)
	if err == nil {
		err = bw.Flush()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}
