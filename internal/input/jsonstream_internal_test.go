package input

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
)

// TestJSONTotalLimit checks the whole-file bound with a small limit: a file over it is refused with its offset,
// not read to the end.
func TestJSONTotalLimit(t *testing.T) {
	doc := `{"cuda:0": {"peak_memory_mb": 1, "tensors": [` + strings.Repeat(`{"size_bytes": 1048576, "phase": "p"},`, 2000) + `{"size_bytes": 1}]}}`
	// A deadline, so that a limit that no longer stops the reads fails here in seconds instead of looping.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s := NewJSONStream(ctx, "big.json", strings.NewReader(doc))
	s.lim.maxTotal = 4096
	if _, err := s.Token(""); err != nil {
		t.Fatal(err)
	}
	k, err := s.NextKey("")
	if err != nil {
		t.Fatal(err)
	}
	err = s.Skip(*k)
	var de *Error
	if !errors.As(err, &de) || !strings.Contains(de.Msg, "larger than") || de.Offset > 4097 {
		t.Errorf("err = %v, want the file-size limit near byte 4096", err)
	}
}
