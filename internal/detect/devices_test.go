package detect

import (
	"context"
	"reflect"
	"testing"

	"github.com/memscan/memscan/findings"
	"github.com/memscan/memscan/internal/categorize"
	"github.com/memscan/memscan/internal/gen"
	"github.com/memscan/memscan/internal/replay"
	"github.com/memscan/memscan/internal/testutil"
)

// TestDetectDevicesInOrder: devices judged at once give the findings of judging them one after the other, in
// device order, each naming its device.
func TestDetectDevicesInOrder(t *testing.T) {
	s := testutil.Generated(t, gen.Config{Seed: 9, Entries: 8000, Devices: 4, Grow: 0.1}).Snapshot
	prepare := func() []*Device {
		var ds []*Device
		for dev := range s.DeviceTraces {
			r, err := replay.ReplayDevice(context.Background(), s, dev)
			if err != nil {
				t.Fatal(err)
			}
			ds = append(ds, Prepare(r, categorize.NewCategorizer(nil)))
		}
		return ds
	}
	ctx := context.Background()
	var want []findings.Finding
	for _, d := range prepare() {
		fs, err := detectDevice(ctx, &Input{Snapshot: s, Model: Replayer{Snapshot: s}}, d)
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range fs {
			want = append(want, findings.OnDevice(f))
		}
	}
	if len(want) == 0 {
		t.Fatal("no findings on the generated devices: the test compares nothing")
	}
	got, err := Detect(ctx, &Input{Snapshot: s, Devices: prepare(), Model: Replayer{Snapshot: s}})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d findings", len(want))
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("devices judged at once: %d findings, one at a time: %d, or they differ", len(got), len(want))
	}
}
