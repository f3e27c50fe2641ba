package results

import (
	"bytes"
	"fmt"
	"io"
	"strings"

	"github.com/vmihailenco/msgpack/v5"

	"github.com/memscan/memscan/findings"
	"github.com/memscan/memscan/internal/inputfile"
	"github.com/memscan/memscan/internal/msgpackcheck"
	"github.com/memscan/memscan/internal/units"
	"github.com/memscan/memscan/report"
)

// summaryRowLimit is the longest list element summary.json writes on one line: an iteration's row with its three
// phases takes about 600 bytes, and 39,000 of them, each over 40 lines, made a training loop's summary 95 MB.
const summaryRowLimit = 1024

// WriteJSON renders run as summary.json: indented, integer bytes, and empty lists as [] rather than null so
// scripts can iterate without checks. A list's elements of up to summaryRowLimit bytes take a line each (a
// category, a device's totals, an iteration's row with its phases).
//
// The run is streamed (report.Run.EncodeJSON) through the indentation: a long trace's per-iteration lists run to
// tens of megabytes and are never held whole.
func WriteJSON(w io.Writer, run *report.Run) error {
	iw := units.NewRowIndentWriter(w, summaryRowLimit)
	err := normalized(run).EncodeJSON(iw)
	if err == nil {
		_, err = iw.Write([]byte("\n"))
	}
	if err == nil {
		err = iw.Flush()
	}
	if err != nil {
		return fmt.Errorf("encoding summary JSON: %w", err)
	}
	return nil
}

// normalized returns a shallow copy of run whose list fields are non-nil, so that JSON shows [] for "none".
func normalized(run *report.Run) *report.Run {
	out := *run
	out.Inputs = make([]*report.Report, len(run.Inputs))
	for i, r := range run.Inputs {
		if r == nil {
			continue
		}
		c := *r
		if c.Devices == nil {
			c.Devices = []int{}
		}
		if c.Categories == nil {
			c.Categories = []report.CategoryStat{}
		}
		if c.Top == nil {
			c.Top = []report.Allocation{}
		}
		if s, ok := c.Part.(*report.SnapshotReport); ok && s.OOMs == nil {
			sc := *s // the caller's report stays as it is
			sc.OOMs = []report.OOM{}
			c.Part = &sc
		}
		if c.Recommendations == nil {
			c.Recommendations = []findings.Finding{}
		}
		if c.Warnings == nil {
			c.Warnings = []string{}
		}
		out.Inputs[i] = &c
	}
	return &out
}

// WriteMsgpack encodes the whole run, timeline included, as report.msgpack.
func WriteMsgpack(w io.Writer, run *report.Run) error {
	enc := msgpack.NewEncoder(w)
	// Sorted map keys (trace_actions) make the file byte-identical for identical input.
	enc.SetSortMapKeys(true)
	if err := enc.Encode(run); err != nil {
		return fmt.Errorf("encoding report msgpack: %w", err)
	}
	return nil
}

// maxMsgpackSize bounds what ReadMsgpack loads; real reports are a few MB even for thousands of ranks.
const maxMsgpackSize = 1 << 30

// ReadMsgpack reads a report.msgpack written by WriteMsgpack. Only a regular file is read, through the size
// limit: a link to /dev/zero or a pipe in a run directory is refused, not read until memory runs out.
func ReadMsgpack(path string) (*report.Run, error) {
	data, err := inputfile.ReadFile(path, "a report", maxMsgpackSize)
	if err != nil {
		return nil, err
	}
	return DecodeMsgpack(path, data)
}

// DecodeMsgpack decodes a report.msgpack held in memory; name is used in errors.
func DecodeMsgpack(name string, data []byte) (*report.Run, error) {
	if len(data) == 0 {
		return nil, fmt.Errorf("%s: empty file", name)
	}
	// The decoder recurses on nesting and trusts declared lengths: a file of ten million nested arrays would
	// overflow its stack, so the structure is checked first.
	if _, err := msgpackcheck.Value(bytes.NewReader(data), 0, msgpackcheck.MaxDepth); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	r := bytes.NewReader(data)
	dec := msgpack.NewDecoder(r)
	var run report.Run
	if err := dec.Decode(&run); err != nil {
		off := int64(len(data)) - int64(r.Len())
		return nil, fmt.Errorf("%s: byte %d: decoding report msgpack: %w", name, off, err)
	}
	if !strings.HasPrefix(run.Tool, "memscan") {
		return nil, fmt.Errorf("%s: field tool: %q is not a memscan report", name, run.Tool)
	}
	if run.Version <= 0 || run.Version > report.ReportVersion {
		return nil, fmt.Errorf("%s: field version: report version %d is not supported (this memscan reads 1 to %d)", name, run.Version, report.ReportVersion)
	}
	for i, in := range run.Inputs {
		if in == nil {
			return nil, fmt.Errorf("%s: field inputs[%d]: missing report", name, i)
		}
	}
	return &run, nil
}
