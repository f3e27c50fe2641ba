package results

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/memscan/memscan/analyze"
	"github.com/memscan/memscan/compare"
	"github.com/memscan/memscan/load"
	"github.com/memscan/memscan/snapshot"
)

// LoadCompareInput is one side of memscan compare: a run directory's report.msgpack (which must hold exactly one
// input), or an input file decoded and analyzed with opts. It lives here because reading a run directory is
// this package's job and compare may not import it; the segments of a snapshot file come with its report.
func LoadCompareInput(ctx context.Context, path string, opts analyze.Options) (compare.Input, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return compare.Input{}, err
	}
	if fi.IsDir() {
		mp := filepath.Join(path, FileMsgpack)
		run, err := ReadMsgpack(mp)
		if err != nil {
			return compare.Input{}, fmt.Errorf("%s: not a memscan run directory: %w", path, err)
		}
		switch len(run.Inputs) {
		case 0:
			return compare.Input{}, fmt.Errorf("%s: the run has no analyzed input", mp)
		case 1:
		default:
			return compare.Input{}, fmt.Errorf("%s: the run holds %d inputs; compare their files instead", mp, len(run.Inputs))
		}
		return compare.Input{Report: run.Inputs[0]}, nil
	}
	in, err := load.DecodeFile(ctx, path)
	if err != nil {
		return compare.Input{}, err
	}
	rep, err := analyze.Analyze(ctx, in, opts)
	if err != nil {
		return compare.Input{}, err
	}
	out := compare.Input{Report: rep}
	if in.Snapshot != nil {
		out.Segments = SegmentIDs(in.Snapshot)
	}
	return out, nil
}

// SegmentIDs lists the segments of a snapshot as compare matches them.
func SegmentIDs(s *snapshot.Snapshot) []compare.SegmentID {
	out := make([]compare.SegmentID, 0, len(s.Segments))
	for i := range s.Segments {
		seg := &s.Segments[i]
		out = append(out, compare.SegmentID{Device: seg.Device, Address: seg.Address, Size: seg.TotalSize, Stream: seg.Stream})
	}
	return out
}
