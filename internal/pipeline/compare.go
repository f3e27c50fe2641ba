package pipeline

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"

	"github.com/memscan/memscan/analyze"
	"github.com/memscan/memscan/internal/compare"
	"github.com/memscan/memscan/internal/results"
	"github.com/memscan/memscan/load"
	"github.com/memscan/memscan/report"
	"github.com/memscan/memscan/snapshot"
)

// CompareInput is one side of memscan compare: a run directory's report.msgpack (which must hold exactly one
// input), or an input file decoded and analyzed with opts; the segments of a snapshot file come with its report.
func CompareInput(ctx context.Context, path string, opts analyze.Options) (compare.Input, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return compare.Input{}, err
	}
	if fi.IsDir() {
		mp := filepath.Join(path, results.FileMsgpack)
		run, err := results.ReadMsgpack(mp)
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
		return compare.Input{}, WithCommandHint(err)
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

// Snapshot decodes the allocator snapshot at path (for memscan export); another kind of input is an error that
// says what it is.
func Snapshot(ctx context.Context, path string) (*snapshot.Snapshot, error) {
	in, err := load.DecodeFile(ctx, path)
	if err != nil {
		return nil, WithCommandHint(err)
	}
	if in.Snapshot == nil {
		return nil, fmt.Errorf("%s is %s, not an allocator snapshot; only snapshots can be exported", path, in.Format)
	}
	return in.Snapshot, nil
}

// RuntimeLoader decodes and analyzes one runtime file with opts: what calibration reads its measurements with.
func RuntimeLoader(ctx context.Context, opts analyze.Options) func(path string) (*report.Report, error) {
	return func(path string) (*report.Report, error) { return analyze.AnalyzeFile(ctx, path, opts) }
}

// View is what memscan view serves for target: a run directory's files, or the live page of a snapshot (or other
// input) file analyzed with opts. what names it for the user.
func View(ctx context.Context, target string, opts analyze.Options, tool string) (h http.Handler, what string, err error) {
	info, err := os.Stat(target)
	if err != nil {
		return nil, "", err
	}
	if info.IsDir() {
		if _, err := os.Stat(filepath.Join(target, results.FileHTML)); err != nil {
			return nil, "", fmt.Errorf("%s has no %s: give a run directory of memscan analyze, or a snapshot file", target, results.FileHTML)
		}
		return http.FileServer(http.Dir(target)), "run directory " + target, nil
	}
	rep, err := analyze.AnalyzeFile(ctx, target, opts)
	if err != nil {
		return nil, "", WithCommandHint(err)
	}
	run := &report.Run{Version: report.ReportVersion, Tool: tool, Inputs: []*report.Report{rep}}
	if h, err = results.PageHandler(run); err != nil {
		return nil, "", err
	}
	return h, "the analysis of " + target, nil
}
