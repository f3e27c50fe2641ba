package load

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/memscan/memscan/internal/input"
	"github.com/memscan/memscan/memtimeline"
	"github.com/memscan/memscan/snapshot"
	"github.com/memscan/memscan/tracer"
	"github.com/memscan/memscan/trainlog"
)

// decodeJSON decodes JSON inputs, telling them apart by shape rather than by name:
//
//   - an object whose values are objects with peak_memory_mb/tensors: tracer peak-memory JSON ("tracer-json");
//   - an object with "segments" (or other allocator-snapshot keys), or a list of objects: the JSON rendition of
//     an allocator snapshot;
//   - a list whose first element is a list: a torch.profiler memory timeline, either the plot form
//     [times, sizes] or the raw event list ("memory-timeline").
//
// Content that starts with '[' but whose first line is not JSON ("[rank0]: ...", "[2024-05-01 ...] ...") is a
// training log and goes to the text decoder.
func decodeJSON(ctx context.Context, name string, br *bufio.Reader) (*Input, error) {
	if serr := input.FirstLineSyntaxError(br); serr != nil {
		// Logs often start with '[' ("[rank0]:", "[2024-05-01 ...]"): a first line that is not JSON is text.
		in, err := decodeText(ctx, name, br)
		if err != nil && errors.Is(err, input.ErrUnknownContent) && !errors.Is(err, trainlog.ErrLineTooLong) {
			return nil, &input.Error{File: name, Offset: serr.Offset, Msg: "neither JSON nor a training log with memory lines", Err: serr}
		}
		return in, err
	}
	s := input.NewJSONStream(ctx, name, br)
	tok, err := s.Token("")
	if err != nil {
		return nil, err
	}
	switch tok {
	case json.Delim('{'):
		return decodeJSONObject(s, name)
	case json.Delim('['):
		return decodeJSONList(s, name)
	}
	return nil, otherJSONError(name, fmt.Sprintf("its top level is %s, where every JSON input is an object or a list", input.DescribeToken(tok)))
}

// decodeJSONObject tells an allocator snapshot from a tracer file by the first key of the top-level object.
func decodeJSONObject(s *input.JSONStream, name string) (*Input, error) {
	k, err := s.NextKey("")
	if err != nil {
		return nil, err
	}
	if k == nil {
		return nil, &input.Error{File: name, Offset: s.Offset(), Msg: "empty JSON object: neither a tracer file nor an allocator snapshot", Err: input.ErrUnknownContent}
	}
	if chromeTraceKeys[*k] {
		return nil, chromeTraceError(name)
	}
	if snapshot.IsSnapshotKey(*k) {
		snap, err := snapshot.DecodeJSONObject(s, *k)
		if err != nil {
			return nil, err
		}
		return &Input{Path: name, Format: snapshot.FormatSnapshotJSON, Snapshot: snap}, nil
	}
	tr, err := tracer.DecodeRest(s, *k)
	var nt *tracer.NotTracerError
	if errors.As(err, &nt) {
		return nil, notTracerError(name, nt)
	}
	if err != nil {
		return nil, err
	}
	if rank, ok := input.RankFromPath(name); ok {
		tr.Rank = rank
	}
	return &Input{Path: name, Format: tracer.Format, Tracer: tr}, nil
}

// decodeJSONList tells a memory timeline (a list of lists) from a bare list of snapshot segments.
func decodeJSONList(s *input.JSONStream, name string) (*Input, error) {
	tok, err := s.Token("[0]")
	if err != nil {
		return nil, err
	}
	switch tok {
	case json.Delim('['):
		tl, err := memtimeline.DecodeRest(s)
		if err != nil {
			return nil, err
		}
		return &Input{Path: name, Format: memtimeline.Format, Timeline: tl}, nil
	case json.Delim('{'), json.Delim(']'):
		snap, err := snapshot.DecodeJSONList(s, tok.(json.Delim))
		if err != nil {
			return nil, err
		}
		return &Input{Path: name, Format: snapshot.FormatSnapshotJSON, Snapshot: snap}, nil
	}
	return nil, otherJSONError(name, fmt.Sprintf("a list whose first element is %s, where a memory timeline holds lists ([times, sizes]) and a snapshot segments (objects)", input.DescribeToken(tok)))
}
