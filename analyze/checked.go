package analyze

import (
	"fmt"
	"math"

	"github.com/memscan/memscan/tracer"
)

// OverflowError reports a size whose addition to the others would pass what an int64 holds: every total,
// category, group, timeline and peak of the report adds up a subset of these sizes, so they are checked once,
// up front, and no sum can wrap to a negative or small wrong number afterwards.
type OverflowError struct {
	// Field is the size where the running total passed 2^63−1, e.g. "segments[3].blocks[5].size".
	Field string
	Value int64
}

func (e *OverflowError) Error() string {
	return fmt.Sprintf("%s: %d: the input's sizes add up past %d bytes (8 EiB); no GPU holds that much, so the file is corrupt or made up",
		e.Field, e.Value, int64(math.MaxInt64))
}

// sizeSum adds the magnitudes of sizes (a negative size is warned about elsewhere; its magnitude still bounds
// the sums it enters).
type sizeSum int64

// add adds |v| and reports false, adding nothing, when the sum would pass math.MaxInt64.
func (s *sizeSum) add(v int64) bool {
	if v == math.MinInt64 {
		return false
	}
	if v < 0 {
		v = -v
	}
	if v > math.MaxInt64-int64(*s) {
		return false
	}
	*s += sizeSum(v)
	return true
}

// checkSizes verifies that every sum the analysis forms fits an int64, checking each kind of size on its own
// (segment totals, each other segment field, block sizes with their requested sizes, which internal free
// subtracts) and the trace's event sizes with the final state they are replayed against (requested sizes for
// the live timeline, segment totals for the reserved one).
func (a *analysis) checkSizes() error {
	var segTotal, segAlloc, segActive, segReq, blocks, live, reserved sizeSum
	overflow := func(v int64, format string, args ...any) error {
		return &OverflowError{Field: fmt.Sprintf(format, args...), Value: v}
	}
	for i := range a.snap.Segments {
		if err := a.checkCtx(); err != nil {
			return err
		}
		seg := &a.snap.Segments[i]
		for _, f := range []struct {
			sum  *sizeSum
			name string
			v    int64
		}{{&segTotal, "total_size", seg.TotalSize}, {&reserved, "total_size", seg.TotalSize}, {&segAlloc, "allocated_size", seg.AllocatedSize},
			{&segActive, "active_size", seg.ActiveSize}, {&segReq, "requested_size", seg.RequestedSize}} {
			if !f.sum.add(f.v) {
				return overflow(f.v, "segments[%d].%s", i, f.name)
			}
		}
		for j := range seg.Blocks {
			b := &seg.Blocks[j]
			if !blocks.add(b.Size) {
				return overflow(b.Size, "segments[%d].blocks[%d].size", i, j)
			}
			if !blocks.add(b.RequestedSize) || !live.add(b.RequestedSize) {
				return overflow(b.RequestedSize, "segments[%d].blocks[%d].requested_size", i, j)
			}
		}
	}
	for d, tr := range a.snap.DeviceTraces {
		for j := range tr {
			if err := a.checkCtx(); err != nil {
				return err
			}
			if v := tr[j].Size; !live.add(v) || !reserved.add(v) {
				return overflow(v, "device_traces[%d][%d].size", d, j)
			}
		}
	}
	return nil
}

// checkTracerSizes is checkSizes for a tracer file: its tensor sizes, which every per-device view adds up.
func checkTracerSizes(tr *tracer.File) error {
	var sum sizeSum
	for i := range tr.Devices {
		d := &tr.Devices[i]
		for j := range d.Tensors {
			if v := d.Tensors[j].SizeBytes; !sum.add(v) {
				return &OverflowError{Field: fmt.Sprintf("%s: tensor %d: size_bytes", d.Name, j), Value: v}
			}
		}
	}
	return nil
}
