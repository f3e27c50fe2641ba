package analyze

import (
	"bytes"
	"context"
	"testing"

	"github.com/memscan/memscan/internal/gen"
	"github.com/memscan/memscan/internal/traingen"
	"github.com/memscan/memscan/snapshot"
)

// TestTimelineDetailRebuildsTheReplay: the detail's blocks and reserved changes rebuild, after every event, the
// allocated and reserved memory that ReplayDevice computes, and their maximum is the report's peak.
func TestTimelineDetailRebuildsTheReplay(t *testing.T) {
	var buf bytes.Buffer
	if _, err := gen.Write(&buf, gen.Config{Seed: 3, Entries: 6000, Stacks: gen.StacksPython, ShareStack: true}); err != nil {
		t.Fatal(err)
	}
	generated, err := snapshot.DecodePickle(context.Background(), "generated", bytes.NewReader(buf.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	for name, s := range map[string]*snapshot.Snapshot{
		"generated": generated,
		"training":  traingen.TrainingLoop{Iterations: 3, Layers: 4, WeightBytes: 8 << 20, ActivationBytes: 32 << 20, LogitsBytes: 64 << 20}.Build(),
	} {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			rep, err := AnalyzeSnapshot(ctx, s, Options{})
			if err != nil {
				t.Fatal(err)
			}
			part := rep.Part.(*SnapshotReport)
			if len(part.Details) != 1 {
				t.Fatalf("%d details, want 1", len(part.Details))
			}
			d := &part.Details[0]
			want, err := ReplayDevice(ctx, s, d.Device)
			if err != nil {
				t.Fatal(err)
			}
			alloc := d.Allocated()
			res := d.InitialReserved
			k := 0
			var peak int64 = d.InitialAllocated
			for j := range d.Events {
				for k < len(d.ReservedEvent) && int(d.ReservedEvent[k]) == j {
					res += d.ReservedDelta[k]
					k++
				}
				if alloc[j] != want.Allocated[j] || res != want.Reserved[j] {
					t.Fatalf("event %d: detail gives allocated %d reserved %d, the replay %d and %d", j, alloc[j], res, want.Allocated[j], want.Reserved[j])
				}
				peak = max(peak, alloc[j])
			}
			if peak != rep.Peak.Bytes {
				t.Errorf("detail peak %d, report peak %d", peak, rep.Peak.Bytes)
			}
			if len(d.TimeUS) != d.Events || d.TimeUS[len(d.TimeUS)-1] != s.DeviceTraces[d.Device][d.Events-1].TimeUS {
				t.Errorf("event times not kept")
			}
			// Every index points into its table, and every stack of the generator is Python frames.
			stacked := 0
			for i := range d.Start {
				if int(d.Site[i]) >= len(d.Sites) || int(d.Reason[i]) >= len(d.Reasons) || int(d.Stack[i]) >= len(d.StackStart)-1 {
					t.Fatalf("block %d indexes out of its tables", i)
				}
				if st := d.Stack[i]; st >= 0 {
					stacked++
					for _, f := range d.StackFrames[d.StackStart[st]:d.StackStart[st+1]] {
						if !bytes.Contains([]byte(d.Frames[f]), []byte(".py:")) {
							t.Fatalf("frame %q is not file:line:function", d.Frames[f])
						}
					}
				}
			}
			if stacked == 0 {
				t.Error("no block has a stack")
			}
			checkEnvelope(t, d, want, rep.Peak.Bytes)
		})
	}
}

// checkEnvelope: every bucket's extremes are those of the replay's series over its events, its category stack
// adds up to its maximum, and the highest bucket is the peak; for the whole trace and for a zoomed range.
func checkEnvelope(t *testing.T, d *TimelineDetail, want *DeviceReplay, peak int64) {
	t.Helper()
	for _, r := range [][3]int{{0, d.Events, 97}, {d.Events / 3, d.Events / 2, 50}, {10, 30, 100}} {
		e := d.Envelope(r[0], r[1], r[2])
		if len(e.Start) != min(r[2], r[1]-r[0]) {
			t.Fatalf("range %v: %d buckets", r, len(e.Start))
		}
		var top int64
		for k := range e.Start {
			end := e.To
			if k+1 < len(e.Start) {
				end = e.Start[k+1]
			}
			lo, hi, rmax := want.Allocated[e.Start[k]], want.Allocated[e.Start[k]], want.Reserved[e.Start[k]]
			for j := e.Start[k]; j < end; j++ {
				lo, hi, rmax = min(lo, want.Allocated[j]), max(hi, want.Allocated[j]), max(rmax, want.Reserved[j])
			}
			if e.AllocMin[k] != lo || e.AllocMax[k] != hi || e.ReservedMax[k] != rmax || e.ReservedEnd[k] != want.Reserved[end-1] {
				t.Fatalf("range %v bucket %d: min %d max %d reserved %d/%d, the replay %d %d %d/%d", r, k, e.AllocMin[k], e.AllocMax[k], e.ReservedMax[k], e.ReservedEnd[k], lo, hi, rmax, want.Reserved[end-1])
			}
			if want.Allocated[e.Peak[k]] != hi {
				t.Fatalf("range %v bucket %d: its peak event %d is not at its maximum", r, k, e.Peak[k])
			}
			var stack int64
			for c := range e.ByCategory {
				stack += e.ByCategory[c][k]
			}
			if stack != hi {
				t.Fatalf("range %v bucket %d: the categories add up to %d, the maximum is %d", r, k, stack, hi)
			}
			top = max(top, hi)
		}
		if r[0] == 0 && r[1] == d.Events && top != peak {
			t.Errorf("the envelope's highest bucket is %d, the peak %d", top, peak)
		}
	}
}
