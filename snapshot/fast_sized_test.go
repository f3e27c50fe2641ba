package snapshot_test

import (
	"bytes"
	"context"
	"reflect"
	"testing"

	"github.com/memscan/memscan/internal/gen"
	"github.com/memscan/memscan/snapshot"
)

// TestFastSizedTraceList checks the trace-list sizing that the input size enables: whatever size the decoder is
// told (the true one, far too small so entries overflow into chunks, far too large so an early checkpoint
// shrinks the list, or none), the model is the same, and with the true size the list does not reserve much
// more than it uses.
func TestFastSizedTraceList(t *testing.T) {
	if testing.Short() {
		t.Skip("decodes a 70,000-entry snapshot several times")
	}
	var buf bytes.Buffer
	// 70,000 entries on one device run past the checkpoints at batches 2, 8 and 32 (batches of 1000).
	st, err := gen.Write(&buf, gen.Config{Name: "sized", Seed: 7, Entries: 70000, Stacks: gen.StacksPython, ShareStack: true})
	if err != nil {
		t.Fatal(err)
	}
	data := buf.Bytes()
	ctx := context.Background()
	want, err := snapshot.DecodeFastPickleSized(ctx, "sized", bytes.NewReader(data), 0)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(want.DeviceTraces[0]); n != st.Entries {
		t.Fatalf("unsized decode: %d entries, generator wrote %d", n, st.Entries)
	}
	for _, tc := range []struct {
		name string
		size int64
	}{
		{"true size", int64(len(data))},
		{"size too small", int64(len(data)) / 4},
		{"size too large", int64(len(data)) * 4},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := snapshot.DecodeFastPickleSized(ctx, "sized", bytes.NewReader(data), tc.size)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, want) {
				t.Fatal("model differs from the unsized decode")
			}
			tr := got.DeviceTraces[0]
			t.Logf("%d entries, capacity %d", len(tr), cap(tr))
			// With the true size the reservation stays within the 25% slack plus one chunk of a projection
			// that is refined as the trace streams; allow 50% for the projection's error.
			if tc.size == int64(len(data)) && cap(tr) > len(tr)*3/2+8192 {
				t.Errorf("trace list: cap %d for %d entries", cap(tr), len(tr))
			}
		})
	}
}
