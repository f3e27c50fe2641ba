package export

import "github.com/memscan/memscan/snapshot"

// Hand-built snapshot used by the tests; every expected number below is derived from these values by hand.
//
// Device 0: a 2 MiB small segment (stream 0) holding b1 (1000 B requested in 1024, live since before the trace) and
// a free remainder; a 20 MiB large segment (stream 7) created in the trace, holding b3 (10,000,000 B requested in
// 10 MiB) and b4 (10 MiB, freed by the user but still pending). Device 1: a legacy 2.0-style segment with history.
var (
	stackModel = &snapshot.Stack{Frames: []snapshot.Frame{
		{Filename: "??", Line: 0, Name: "torch::unwind::unwind()"}, // hidden by the viewer's filter
		{Filename: "/src/model.py", Line: 10, Name: "forward"},
		{Filename: `C:\proj\train.py`, Line: 5, Name: "main"},
	}}
	stackOpt = &snapshot.Stack{Frames: []snapshot.Frame{
		{Filename: "/src/opt.py", Line: 20, Name: "step"},
		{Filename: "/src/train.py", Line: 9, Name: "main"},
	}}
)

// The fixtures' trace entries name the two stacks by these indices into fixtureStacks.
const (
	refOpt   snapshot.StackRef = 1
	refModel snapshot.StackRef = 2
	// refStream7 is stream 7 in the fixtures' TraceStreams.
	refStream7 snapshot.StreamRef = 1
)

// fixtureStacks is the TraceStacks table of every fixture (computed when first used: the stacks are variables).
var fixtureStacks = []*snapshot.Stack{nil, stackOpt, stackModel}

const (
	seg0Addr = 0x7f0000000000
	seg1Addr = 0x7f0000200000
	seg2Addr = 0x7f0001600000
	tmpAddr  = 0x7f0000900000 // allocated and freed inside the trace
	preAddr  = 0x7f0000a00000 // freed in the trace, allocated before it
	mib      = 1 << 20
)

func fixtureSnapshot() *snapshot.Snapshot {
	tr := []snapshot.TraceEntry{
		{Action: snapshot.ActionSegmentAlloc, Addr: seg1Addr, Size: 20 * mib, Stream: refStream7, Stack: refOpt},
		{Action: snapshot.ActionAlloc, Addr: tmpAddr, Size: 5000, Stream: refStream7, Stack: refOpt},
		{Action: snapshot.ActionAlloc, Addr: seg1Addr, Size: 10000000, Stream: refStream7, Stack: refOpt},
		{Action: snapshot.ActionFreeRequested, Addr: tmpAddr, Size: 5000, Stream: refStream7, Stack: refOpt},
		{Action: snapshot.ActionFreeCompleted, Addr: tmpAddr, Size: 5000, Stream: refStream7, Stack: refOpt},
		{Action: snapshot.ActionAlloc, Addr: seg1Addr + 10*mib, Size: 10 * mib, Stream: refStream7, Stack: refModel},
		{Action: snapshot.ActionOOM, Size: 1 << 30, Extra: 1, Stream: refStream7, Stack: refModel},
		{Action: snapshot.ActionFreeRequested, Addr: seg1Addr + 10*mib, Size: 10 * mib, Stream: refStream7, Stack: refModel},
		{Action: snapshot.ActionFreeRequested, Addr: preAddr, Size: 777, Stream: 0, Stack: refModel},
		{Action: snapshot.ActionFreeCompleted, Addr: preAddr, Size: 777, Stream: 0, Stack: refModel},
		{Action: snapshot.ActionSnapshot, Size: 10001000, Stream: 0},
	}
	for i := range tr {
		tr[i].TimeUS, tr[i].HasTime = 1_700_000_000_000_000+int64(i)*10, true
	}
	return &snapshot.Snapshot{
		Segments: []snapshot.Segment{
			{Device: 0, Address: seg0Addr, TotalSize: 2 * mib, AllocatedSize: 1024, ActiveSize: 1024, RequestedSize: 1000,
				Stream: 0, Type: snapshot.SegmentSmall, Blocks: []snapshot.Block{
					{Address: seg0Addr, Size: 1024, RequestedSize: 1000, State: snapshot.BlockActiveAllocated, Stack: stackModel},
					{Address: seg0Addr + 1024, Size: 2*mib - 1024, RequestedSize: 0, State: snapshot.BlockInactive},
				}},
			{Device: 0, Address: seg1Addr, TotalSize: 20 * mib, AllocatedSize: 10 * mib, ActiveSize: 20 * mib,
				RequestedSize: 10000000 + 10*mib, Stream: 7, Type: snapshot.SegmentLarge, Stack: stackOpt, Blocks: []snapshot.Block{
					{Address: seg1Addr, Size: 10 * mib, RequestedSize: 10000000, State: snapshot.BlockActiveAllocated, Stack: stackOpt},
					{Address: seg1Addr + 10*mib, Size: 10 * mib, RequestedSize: 10 * mib, State: snapshot.BlockActivePendingFree, Stack: stackModel},
				}},
			{Device: 1, Address: seg2Addr, TotalSize: 4096, AllocatedSize: 4096, ActiveSize: 4096, RequestedSize: 3000,
				Stream: 0, Type: snapshot.SegmentSmall, Blocks: []snapshot.Block{
					{Address: seg2Addr, Size: 4096, RequestedSize: 3000, State: snapshot.BlockActiveAllocated, Stack: stackOpt,
						History: []snapshot.History{{Addr: seg2Addr, RealSize: 3000, Stack: stackOpt}, {Addr: seg2Addr + 3000, RealSize: 500}}},
				}},
		},
		TraceStacks:  fixtureStacks,
		TraceExtras:  []snapshot.TraceExtra{{}, {DeviceFree: 123}},
		TraceStreams: []uint64{0, 7},
		DeviceTraces: [][]snapshot.TraceEntry{tr, {}},
		AllocatorSettings: &snapshot.AllocatorSettings{MaxSplitSize: -1, GarbageCollectionThreshold: 0.5,
			RoundupPower2Divisions: map[string]int64{"1": 1, "16": 4, "2": 2}},
		ExternalAnnotations: []snapshot.Annotation{{Stage: "START", Name: "ProfilerStep#1", Device: 0, TimeUS: 1_700_000_000_000_015}},
		Protocol:            4,
		TorchFormat:         "2.5+",
	}
}

// fixtureClassifier puts optimizer-step allocations in "optimizer" and the rest in "activation".
func fixtureClassifier(st *snapshot.Stack) (string, string) {
	site := InnermostSite(st)
	if st == stackOpt {
		return "optimizer", site
	}
	return "activation", site
}
