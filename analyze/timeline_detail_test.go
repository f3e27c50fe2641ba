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
		})
	}
}
