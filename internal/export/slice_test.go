package export

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/memscan/memscan/load"
	"github.com/memscan/memscan/snapshot"
)

func TestParseWindow(t *testing.T) {
	tests := []struct {
		in      string
		want    Window
		wantErr bool
	}{
		{"1:6", Window{1, 6}, false},
		{":6", Window{0, 6}, false},
		{"4:", Window{4, -1}, false},
		{"6:1", Window{}, true},
		{"x:1", Window{}, true},
		{"5", Window{}, true},
		{"-1:3", Window{}, true},
	}
	for _, tc := range tests {
		got, err := ParseWindow(tc.in)
		if (err != nil) != tc.wantErr || (!tc.wantErr && got != tc.want) {
			t.Errorf("ParseWindow(%q) = %v, %v", tc.in, got, err)
		}
	}
}

func TestSliceFixture(t *testing.T) {
	tests := []struct {
		name      string
		opt       SliceOptions
		wantIdx   []int // indices of the device-0 events kept, by hand
		wantSites []string
	}{
		{"window", SliceOptions{Window: &Window{1, 6}}, []int{1, 2, 3, 4, 5}, nil},
		{"window-past-end", SliceOptions{Window: &Window{9, 100}}, []int{9, 10}, nil},
		// Site bytes: opt.py:step 5000 + 10,000,000 (trace) + 10,000,000 + 3000 (live) = 20,008,000;
		// model.py:forward 10 MiB (trace) + 1000 (live) = 10,486,760. Top 1 keeps the opt.py allocations with their
		// frees, plus the segment, OOM and snapshot events.
		{"top1", SliceOptions{TopN: 1, Classify: fixtureClassifier}, []int{0, 1, 2, 3, 4, 6, 10}, []string{"/src/opt.py:20:step"}},
		{"window+top1", SliceOptions{Window: &Window{2, 9}, TopN: 1, Classify: fixtureClassifier}, []int{2, 3, 4, 6}, []string{"/src/opt.py:20:step"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			orig := fixtureSnapshot()
			got, sites, err := Slice(context.Background(), orig, tc.opt)
			if err != nil {
				t.Fatal(err)
			}
			var want []snapshot.TraceEntry
			for _, i := range tc.wantIdx {
				want = append(want, orig.DeviceTraces[0][i])
			}
			if !reflect.DeepEqual(got.DeviceTraces[0], want) {
				t.Errorf("kept %d events, want %v", len(got.DeviceTraces[0]), tc.wantIdx)
			}
			var names []string
			for _, s := range sites {
				names = append(names, s.Site)
			}
			if !reflect.DeepEqual(names, tc.wantSites) {
				t.Errorf("sites %v, want %v", names, tc.wantSites)
			}
			if !reflect.DeepEqual(got.Segments, orig.Segments) {
				t.Error("segments changed")
			}
			if !reflect.DeepEqual(fixtureSnapshot().DeviceTraces, orig.DeviceTraces) {
				t.Error("input modified")
			}
		})
	}
}

// TestSliceDecodesBack writes a sliced pickle and reads it with memscan's own decoder: the state totals equal the
// original's and the trace is exactly the window.
func TestSliceDecodesBack(t *testing.T) {
	orig := fixtureSnapshot()
	path := filepath.Join(t.TempDir(), "slice.pickle")
	var buf bytes.Buffer
	if _, err := WriteSlice(context.Background(), &buf, orig, SliceOptions{Window: &Window{1, 6}}); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	in, err := load.DecodeFile(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	s := in.Snapshot
	if s == nil {
		t.Fatalf("decoded %s, not a snapshot", in.Format)
	}
	if got, want := stateTotals(s), stateTotals(orig); got != want {
		t.Errorf("totals %+v, want %+v", got, want)
	}
	if len(s.DeviceTraces) != 2 || len(s.DeviceTraces[0]) != 5 || len(s.DeviceTraces[1]) != 0 {
		t.Fatalf("trace lengths wrong")
	}
	var allocBytes int64
	for i, e := range s.DeviceTraces[0] {
		o := orig.DeviceTraces[0][i+1]
		if e.Action != o.Action || e.Addr != o.Addr || e.Size != o.Size || e.TimeUS != o.TimeUS || !sameFrames(s.EntryStack(&e), orig.EntryStack(&o)) {
			t.Errorf("event %d: %+v, want %+v", i, e, o)
		}
		if e.Action == snapshot.ActionAlloc {
			allocBytes += e.Size
		}
	}
	if allocBytes != 5000+10000000+10*mib {
		t.Errorf("window alloc bytes %d", allocBytes)
	}
}

type totals struct{ reserved, allocated, requested, active int64 }

func stateTotals(s *snapshot.Snapshot) totals {
	var t totals
	for _, seg := range s.Segments {
		t.reserved += seg.TotalSize
		for _, b := range seg.Blocks {
			if b.State == snapshot.BlockActiveAllocated {
				t.allocated += b.Size
				t.requested += b.RequestedSize
			}
			if b.State.Active() {
				t.active += b.Size
			}
		}
	}
	return t
}

func sameFrames(a, b *snapshot.Stack) bool {
	var fa, fb []snapshot.Frame
	if a != nil {
		fa = a.Frames
	}
	if b != nil {
		fb = b.Frames
	}
	return len(fa) == len(fb) && (len(fa) == 0 || reflect.DeepEqual(fa, fb))
}
