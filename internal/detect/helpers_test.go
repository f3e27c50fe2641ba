package detect_test

import (
	"context"
	"testing"

	"github.com/memscan/memscan/findings"
	"github.com/memscan/memscan/internal/categorize"
	"github.com/memscan/memscan/internal/detect"
	"github.com/memscan/memscan/internal/replay"
	"github.com/memscan/memscan/snapshot"
)

// prepare replays every device trace of s (package replay, as analyze does) and prepares it for the detectors.
func prepare(t testing.TB, s *snapshot.Snapshot) *detect.Input {
	t.Helper()
	in := &detect.Input{Snapshot: s}
	cz := categorize.NewCategorizer(nil)
	for dev, tr := range s.DeviceTraces {
		if len(tr) == 0 {
			continue
		}
		r, err := replay.ReplayDevice(context.Background(), s, dev)
		if err != nil {
			t.Fatalf("replay device %d: %v", dev, err)
		}
		in.Devices = append(in.Devices, detect.Prepare(r, cz))
	}
	return in
}

// shareOf returns the bytes of name in shares.
func shareOf(shares []findings.Share, name string) int64 {
	for _, s := range shares {
		if s.Name == name {
			return s.Bytes
		}
	}
	return 0
}
