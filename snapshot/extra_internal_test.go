package snapshot

import "testing"

func TestTraceExtraEmpty(t *testing.T) {
	for _, tc := range []struct {
		name string
		x    TraceExtra
	}{
		{"zero", TraceExtra{}},
		{"other action", TraceExtra{OtherAction: "snapshot"}},
		{"compile context", TraceExtra{CompileContext: "c"}},
		{"user metadata", TraceExtra{UserMetadata: "u"}},
		{"internal metadata", TraceExtra{InternalMetadata: "i"}},
		{"category", TraceExtra{Category: "ACTIVATION"}},
		{"pool", TraceExtra{Pool: PoolID{0, 1}}},
		{"device free", TraceExtra{DeviceFree: 1}},
	} {
		if got, want := tc.x.empty(), tc.x == (TraceExtra{}); got != want {
			t.Errorf("%s: empty() = %v, want %v", tc.name, got, want)
		}
	}
}
