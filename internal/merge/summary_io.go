package merge

import (
	"bytes"
	"fmt"
	"io"
	"os"

	"github.com/memscan/memscan/report"
	"github.com/vmihailenco/msgpack/v5"
)

// maxSummaryFile bounds what ReadSummaryFile loads: a rank summary is a few KB, a full report.msgpack of one
// rank a few MB.
const maxSummaryFile = 256 << 20

// WriteSummary encodes one rank summary as msgpack.
func WriteSummary(w io.Writer, s *RankSummary) error {
	enc := msgpack.NewEncoder(w)
	enc.SetSortMapKeys(true)
	if err := enc.Encode(s); err != nil {
		return fmt.Errorf("encoding rank summary: %w", err)
	}
	return nil
}

// ReadSummaryFile reads the rank summaries in a msgpack file: a rank summary (memscan analyze --summary-only),
// or a run's report.msgpack, whose inputs are summarized here.
func ReadSummaryFile(path string) ([]*RankSummary, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxSummaryFile+1))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if len(data) > maxSummaryFile {
		return nil, fmt.Errorf("%s: larger than %d bytes; not a memscan summary", path, maxSummaryFile)
	}
	return DecodeSummaries(path, data)
}

// maxSummaryOOMs bounds a rank's OOM count: a process records a few; a million ranks of this many still sum
// within an int64.
const maxSummaryOOMs = 1 << 30

// DecodeSummaries decodes the msgpack data of a summary or report file named name.
func DecodeSummaries(name string, data []byte) ([]*RankSummary, error) {
	var head struct {
		Kind    string `msgpack:"kind"`
		Version int    `msgpack:"version"`
	}
	dec := msgpack.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&head); err != nil {
		return nil, fmt.Errorf("%s: not a msgpack summary or report: %w", name, err)
	}
	switch head.Kind {
	case SummaryKind:
		if head.Version > SummaryVersion {
			return nil, fmt.Errorf("%s: rank summary version %d is newer than this memscan reads (%d)", name, head.Version, SummaryVersion)
		}
		var s RankSummary
		if err := msgpack.NewDecoder(bytes.NewReader(data)).Decode(&s); err != nil {
			return nil, fmt.Errorf("%s: decoding rank summary: %w", name, err)
		}
		// Byte sums are checked as they are formed (OverflowError); a count of events is simply bounded, so
		// that a made-up summary cannot wrap the OOM totals.
		if s.OOMs < 0 || s.OOMs > maxSummaryOOMs {
			return nil, fmt.Errorf("%s: ooms %d: a rank's count of out-of-memory events must be 0 to %d", name, s.OOMs, maxSummaryOOMs)
		}
		return []*RankSummary{&s}, nil
	case CrossRankKind:
		return nil, fmt.Errorf("%s: a merged cross-rank report; merge the rank summaries it came from instead", name)
	case "":
		var run report.Run
		if err := msgpack.NewDecoder(bytes.NewReader(data)).Decode(&run); err != nil {
			return nil, fmt.Errorf("%s: decoding report: %w", name, err)
		}
		if run.Version == 0 || len(run.Inputs) == 0 {
			return nil, fmt.Errorf("%s: no analyzed inputs (not a memscan report.msgpack or rank summary)", name)
		}
		out := make([]*RankSummary, 0, len(run.Inputs))
		for _, r := range run.Inputs {
			if r != nil {
				out = append(out, Summarize(r))
			}
		}
		return out, nil
	}
	return nil, fmt.Errorf("%s: unknown kind %q", name, head.Kind)
}
