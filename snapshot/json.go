package snapshot

import (
	"encoding/json"
	"fmt"

	"github.com/memscan/memscan/internal/input"
)

// FormatSnapshotJSON is the format name of the JSON rendition of an allocator snapshot.
const FormatSnapshotJSON = "snapshot-json"

// IsSnapshotKey reports whether a top-level key belongs to an allocator snapshot rather than a tracer device.
func IsSnapshotKey(k string) bool {
	switch k {
	case "segments", "device_traces", "allocator_settings", "external_annotations", "host_segments", "host_traces":
		return true
	}
	return false
}

// DecodeJSONObject rebuilds the generic value of an allocator-snapshot object whose first key has been
// read, then hands it to the snapshot decoder. Snapshot values are decoded whole, so the per-value bound is
// lifted to the file bound here.
func DecodeJSONObject(s *input.JSONStream, first string) (*Snapshot, error) {
	s.LiftValueBound()
	m := map[string]any{}
	key := &first
	for key != nil {
		var v any
		if err := s.Decode(&v); err != nil {
			return nil, s.Wrap(*key, err)
		}
		m[*key] = v
		var err error
		if key, err = s.NextKey(""); err != nil {
			return nil, err
		}
	}
	if err := s.End(); err != nil {
		return nil, err
	}
	return decodeSnapshotJSON(s.Name(), m)
}

// DecodeJSONList rebuilds a bare list of segment objects; open is the token that followed '[' ('{' of
// the first segment, or ']' for an empty list).
func DecodeJSONList(s *input.JSONStream, open json.Delim) (*Snapshot, error) {
	s.LiftValueBound()
	list := []any{}
	if open == '{' {
		first := map[string]any{}
		for {
			k, err := s.NextKey("[0]")
			if err != nil {
				return nil, err
			}
			if k == nil {
				break
			}
			var v any
			if err := s.Decode(&v); err != nil {
				return nil, s.Wrap("[0]."+*k, err)
			}
			first[*k] = v
		}
		list = append(list, first)
		for i := 1; ; i++ {
			more, err := s.More("")
			if err != nil {
				return nil, err
			}
			if !more {
				break
			}
			var v any
			if err := s.Decode(&v); err != nil {
				return nil, s.Wrap(fmt.Sprintf("[%d]", i), err)
			}
			list = append(list, v)
		}
		if err := s.ExpectDelim("", ']'); err != nil {
			return nil, err
		}
	}
	if err := s.End(); err != nil {
		return nil, err
	}
	return decodeSnapshotJSON(s.Name(), list)
}
