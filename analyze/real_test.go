package analyze

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/memscan/memscan/internal/realsnap"
	"github.com/memscan/memscan/load"
	"github.com/memscan/memscan/report"
)

// decodeOrSkip decodes a real snapshot, skipping when the pickle decoder is not available in this build.
func decodeOrSkip(t *testing.T, path string) *load.Input {
	t.Helper()
	in, err := load.DecodeFile(context.Background(), path)
	if err != nil {
		t.Skipf("pickle decoder unavailable or failing (%v); totals are checked once it decodes", err)
	}
	return in
}

// TestRealSnapshotTotals checks every real snapshot against PyTorch's own _memory_viz stats numbers (manifest
// segsum) to the byte, and the replayed trace events against the manifest's action counts.
func TestRealSnapshotTotals(t *testing.T) {
	dir, manifest := realsnap.Load(t)
	for _, m := range manifest {
		t.Run(m.File, func(t *testing.T) {
			in := decodeOrSkip(t, filepath.Join(dir, m.File))
			r, err := Analyze(context.Background(), in, Options{})
			if err != nil {
				t.Fatal(err)
			}
			sp := partOf[*report.SnapshotReport](t, r)
			s := m.Segsum
			if sp.ReservedBytes != s.Reserved || sp.RequestedBytes != s.Allocated || sp.InternalFreeBytes != s.FreeInt ||
				sp.ExternalFreeBytes != s.FreeExt || sp.Segments != s.Segments {
				t.Errorf("totals: reserved %d requested %d internal %d external %d segments %d; PyTorch: %d %d %d %d %d",
					sp.ReservedBytes, sp.RequestedBytes, sp.InternalFreeBytes, sp.ExternalFreeBytes, sp.Segments,
					s.Reserved, s.Allocated, s.FreeInt, s.FreeExt, s.Segments)
			}
			// The identity PyTorch asserts, and the category split covering allocated bytes exactly.
			if sp.RequestedBytes+sp.InternalFreeBytes+sp.ExternalFreeBytes != sp.ReservedBytes {
				t.Errorf("requested+internal+external != reserved")
			}
			var catSum int64
			for _, c := range r.Categories {
				catSum += c.Bytes
			}
			if catSum != sp.AllocatedBytes {
				t.Errorf("categories sum to %d, allocated is %d", catSum, sp.AllocatedBytes)
			}
			if len(sp.TraceActions) != len(m.Actions) {
				t.Errorf("trace actions %v, manifest %v", sp.TraceActions, m.Actions)
			}
			for a, n := range m.Actions {
				if sp.TraceActions[a] != n {
					t.Errorf("action %s: replayed %d events, manifest has %d", a, sp.TraceActions[a], n)
				}
			}
			if m.Actions["oom"] != len(sp.OOMs) {
				t.Errorf("ooms: %d, manifest has %d oom events", len(sp.OOMs), m.Actions["oom"])
			}
			// Invariants of the replay: the peak is at least the live requested bytes at the dump when a trace
			// saw every device, and every timeline point is within the series bounds.
			for _, ts := range sp.Timeline {
				if len(ts.Index) > DefaultMaxTimelinePoints || len(ts.Allocated) != len(ts.Index) {
					t.Errorf("device %d: %d points", ts.Device, len(ts.Index))
				}
				for k := range ts.Index {
					var sum int64
					for c := range ts.Categories {
						sum += ts.ByCategory[c][k]
					}
					if sum != ts.Allocated[k] {
						t.Fatalf("device %d point %d: categories sum to %d, allocated %d", ts.Device, k, sum, ts.Allocated[k])
					}
				}
			}
			if r.Peak != nil {
				var live int64
				for _, c := range r.Peak.Categories {
					live += c.Bytes
				}
				if live != r.Peak.Bytes {
					t.Errorf("live set at peak sums to %d, peak is %d", live, r.Peak.Bytes)
				}
			}
		})
	}
}

func BenchmarkAnalyzeReal(b *testing.B) {
	dir := realsnap.SharedDir(b, "real_snapshots")
	in, err := load.DecodeFile(context.Background(), filepath.Join(dir, "kkaitlyn111__cs336-a2-systems__cs336_systems_memory_logs_memory_ctx128_forward.pickle"))
	if err != nil {
		b.Skip(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Analyze(context.Background(), in, Options{}); err != nil {
			b.Fatal(err)
		}
	}
}
