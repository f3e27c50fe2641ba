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
// shrinks the list, or none), or only claimed (PickleSource.SizeHint), the model is the same, and with the true
// size the list does not reserve much more than it uses.
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
		name   string
		size   int64
		hinted bool // only claimed (a gzip trailer's): believed within sixteen times what the list has read
	}{
		{"true size", int64(len(data)), false},
		{"size too small", int64(len(data)) / 4, false},
		{"size too large", int64(len(data)) * 4, false},
		{"true claim", int64(len(data)), true},
		{"claim too small", 1000, true},
		{"claim of 4 GiB", 1<<32 - 1, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			decode := snapshot.DecodeFastPickleSized
			if tc.hinted {
				decode = snapshot.DecodeFastPickleHinted
			}
			got, err := decode(ctx, "sized", bytes.NewReader(data), tc.size)
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
			// A true claim sizes the list ahead (unsized, it is joined from chunks at its length); a false one
			// reserves at most sixteen times the bytes read, at no fewer than 8 bytes an entry, with the slack.
			if tc.hinted && tc.size == int64(len(data)) && cap(tr) == len(tr) {
				t.Errorf("true claim: the list was not sized from it (cap %d)", cap(tr))
			}
			if tc.hinted && cap(tr) > len(tr)+5*len(data)/2+8192 {
				t.Errorf("claim of %d bytes: cap %d for %d entries of a %d-byte pickle", tc.size, cap(tr), len(tr), len(data))
			}
		})
	}
}
