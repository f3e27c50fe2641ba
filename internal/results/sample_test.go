package results

import (
	"github.com/memscan/memscan/analyze"
	"github.com/memscan/memscan/findings"
	"github.com/memscan/memscan/report"
)

// sampleReport builds a report by hand whose numbers obey the allocator identities:
// reserved = requested + internal free + external free, allocated = requested + internal free,
// efficiency = requested / reserved × 100.
func sampleReport(file string, rank int, scale int64) *report.Report {
	const (
		mib = int64(1) << 20
		gib = int64(1) << 30
	)
	requested := 30*gib*scale + 123_456
	internal := 200*mib + 7_000
	external := 2*gib*scale + 500*mib
	reserved := requested + internal + external
	allocated := requested + internal
	t := report.Totals{
		ReservedBytes:         reserved,
		AllocatedBytes:        allocated,
		RequestedBytes:        requested,
		ActiveBytes:           allocated,
		InactiveBytes:         external,
		InternalFreeBytes:     internal,
		ExternalFreeBytes:     external,
		EfficiencyPct:         float64(requested) * 100 / float64(reserved),
		LargestFreeBlockBytes: 1 * gib,
		Segments:              42,
		Blocks:                1234,
	}
	return &report.Report{
		Header: report.Header{File: file, Format: "pickle-v4", TorchFormat: "2.1+", Rank: rank, Iteration: 1, Devices: []int{0}, Categories: []report.CategoryStat{
			{Name: "Expert/MoE", Bytes: 18 * gib * scale, Count: 96},
			{Name: "Attention", Bytes: 8 * gib * scale, Count: 40},
			{Name: "Optimizer State", Bytes: 4*gib*scale + 123_456, Count: 200},
			{Name: "Unknown", Bytes: 200*mib + 7_000, Count: 898},
		}, Top: []report.Allocation{
			{Size: 4 * gib, RequestedSize: 4 * gib, Address: 0x7f0000000000, Device: 0, State: "active_allocated", Category: "Expert/MoE", Site: "torchtitan/models/moe/moe.py:212:forward"},
			{Size: 2 * gib, RequestedSize: 2*gib - 512, Address: 0x7f0100000000, Device: 0, State: "active_allocated", Category: "Attention", Site: "torchtitan/models/attention.py:88:sdpa|weird"},
			{Size: 512 * mib, RequestedSize: 512 * mib, Address: 0x7f0200000000, Device: 0, State: "active_allocated", Category: "Optimizer State", Site: "torch/optim/adamw.py:501:_init_group"},
			{Size: 2 * mib, RequestedSize: 2 * mib, Address: 0x7f0300000000, Device: 0, State: "active_allocated", Category: "Unknown", Site: ""},
		}, Sites: []report.SiteStat{
			{Site: "torchtitan/models/moe/moe.py:212:forward", Category: "Expert/MoE", Bytes: 18 * gib * scale, Count: 96},
			{Site: "torchtitan/models/attention.py:88:sdpa|weird", Category: "Attention", Bytes: 8 * gib * scale, Count: 40},
		}, Peak: &report.Peak{
			Device: 0, Bytes: 31 * gib, EventIndex: 20, TimeUS: 1_700_000_001_000_000,
			Categories: []report.CategoryStat{{Name: "Expert/MoE", Bytes: 20 * gib, Count: 100}, {Name: "Attention", Bytes: 11 * gib, Count: 44}},
			Sites:      []report.SiteStat{{Site: "torchtitan/models/moe/moe.py:212:forward", Category: "Expert/MoE", Bytes: 20 * gib, Count: 100}},
		}, Recommendations: []findings.Finding{{
			ID: "cache-overhead", Severity: "warning", Title: "High cache overhead",
			Evidence: "cached free memory is 8.9 % of reserved", Value: 8.9, Threshold: 10,
			Advice: "Call torch.cuda.empty_cache() between phases or set expandable_segments:True.",
		}, {
			ID: "large-free-blocks", Severity: "info", Title: "Large unused blocks",
			Evidence: "2 cached free blocks of 100 MB or more", Value: 2, Threshold: 104857600,
			Advice: "Reuse buffers of the same size.",
		}}, Warnings: []string{"block at 0x7f0300000000: requested size missing, size used"}},
		Part: &report.SnapshotReport{Totals: t, PerDevice: []report.GroupTotals{{Key: "0", Totals: t}}, PerSegmentType: []report.GroupTotals{
			{Key: "large", Totals: report.Totals{ReservedBytes: reserved - 20*mib, AllocatedBytes: allocated - 18*mib, RequestedBytes: requested - 18*mib, Segments: 40, EfficiencyPct: 93.1}},
			{Key: "small", Totals: report.Totals{ReservedBytes: 20 * mib, AllocatedBytes: 18 * mib, RequestedBytes: 18 * mib, Segments: 2, EfficiencyPct: 90}},
		}, ActiveSizes: []report.SizeBucket{
			{Lo: 512, Hi: 1024, Count: 800, Bytes: 800 * 512},
			{Lo: 1 * mib, Hi: 2 * mib, Count: 300, Bytes: 300 * mib},
			{Lo: 1 * gib, Hi: 2 * gib, Count: 20, Bytes: 28 * gib},
		}, FreeSizes: []report.SizeBucket{
			{Lo: 2 * mib, Hi: 4 * mib, Count: 10, Bytes: 25 * mib},
			{Lo: 1 * gib, Hi: 0, Count: 1, Bytes: 1 * gib},
		}, Fragmentation: report.Fragmentation{
			InternalWasteBytes: internal, CachedFreeBytes: external,
			MostlyFreeSegments: 3, MostlyFreeSegmentsBytes: 1500 * mib, MostlyFreeThreshold: 0.5,
			LargeFreeBlocks: 2, LargeFreeBlocksBytes: 1*gib + 300*mib, FragmentationPct: 58.25,
		}, Timeline: []report.TimelineSeries{{
			Device:     0,
			Index:      []int{0, 10, 20, 30, 40},
			TimeUS:     []int64{1_700_000_000_000_000, 1_700_000_000_500_000, 1_700_000_001_000_000, 1_700_000_001_500_000, 1_700_000_002_000_000},
			Allocated:  []int64{1 * gib, 10 * gib, 31 * gib, 20 * gib, 30 * gib},
			Reserved:   []int64{2 * gib, 12 * gib, 33 * gib, 33 * gib, 33 * gib},
			Categories: []string{"Expert/MoE", "Attention"},
			ByCategory: [][]int64{{0, 6 * gib, 20 * gib, 12 * gib, 18 * gib}, {1 * gib, 4 * gib, 11 * gib, 8 * gib, 12 * gib}},
		}}, DevicePeaks: []report.Peak{
			{Device: 0, Bytes: 31 * gib, EventIndex: 20, TimeUS: 1_700_000_001_000_000},
			{Device: 1, Bytes: 2 * gib, EventIndex: 7},
		}, OOMs: []report.OOM{{Device: 0, EventIndex: 35, TimeUS: 1_700_000_001_700_000, RequestedBytes: 8 * gib, DeviceFreeBytes: 3 * gib,
			Site: "torchtitan/models/moe/moe.py:212:forward", Category: "Expert/MoE", AllocatedBytes: 29 * gib, ReservedBytes: 33 * gib}}, LeakSuspects: []report.LeakSuspect{{Device: 0, Site: "train.py:88:step", Category: "Unknown", Markers: 5, MarkerKind: "snapshot markers iterations",
			FirstBytes: 10 * mib, LastBytes: 50 * mib, GrowthBytes: 40 * mib, PerIterationBytes: 10 * mib}}, TraceActions: map[string]int{"alloc": 120, "free_completed": 100, "free_requested": 100, "oom": 1, "segment_alloc": 3}},
	}
}

// snapshotPart is the part of a report the fixtures here built as a snapshot.
func snapshotPart(r *report.Report) *report.SnapshotReport { return r.Part.(*report.SnapshotReport) }

// sampleRun is a two-input run with a failure and the cross-input section.
func sampleRun() *report.Run {
	a := sampleReport("outputs/memory_snapshot/iteration_1/rank0_memory_snapshot.pickle", 0, 1)
	b := sampleReport("outputs/memory_snapshot/iteration_1/rank1_memory_snapshot.pickle", 1, 2)
	as, bs := snapshotPart(a), snapshotPart(b)
	bs.Timeline, b.Peak, bs.OOMs, b.Recommendations, b.Warnings = nil, nil, nil, nil, nil
	return &report.Run{
		Version:  report.ReportVersion,
		Tool:     "memscan 0.1.0",
		Inputs:   []*report.Report{a, b},
		Failures: []report.Failure{{File: "outputs/memory_snapshot/iteration_1/rank2_memory_snapshot.pickle", Error: "rank2_memory_snapshot.pickle: byte 1234: truncated pickle"}},
		Cross: &report.Cross{
			Rows: []report.CrossRow{
				{File: a.File, Rank: 0, Iteration: 1, ReservedBytes: as.ReservedBytes, AllocatedBytes: as.AllocatedBytes, PeakBytes: a.Peak.Bytes, EfficiencyPct: as.EfficiencyPct},
				{File: b.File, Rank: 1, Iteration: 1, ReservedBytes: bs.ReservedBytes, AllocatedBytes: bs.AllocatedBytes, EfficiencyPct: bs.EfficiencyPct},
			},
			MaxReservedBytes: bs.ReservedBytes, MedianReservedBytes: (as.ReservedBytes + bs.ReservedBytes) / 2,
			MaxAllocatedBytes: bs.AllocatedBytes, MedianAllocatedBytes: (as.AllocatedBytes + bs.AllocatedBytes) / 2,
			ImbalancePct: 12.5, OutlierFiles: []string{b.File},
			Recommendations: []findings.Finding{{ID: "rank-imbalance", Severity: "warning", Title: "Rank imbalance",
				Evidence: "rank 1 reserves 12.5 % more than the median", Value: 12.5, Threshold: 10, Advice: "Balance the pipeline stages."}},
		},
	}
}

// singleRun is a one-input run.
func singleRun() *report.Run {
	return &report.Run{Version: report.ReportVersion, Tool: "memscan 0.1.0",
		Inputs: []*report.Report{sampleReport("iteration_1/rank0_memory_snapshot.pickle", 0, 1)}}
}

// viewsRun holds one input of each non-snapshot kind: tracer JSON, a memory timeline and a training log.
func viewsRun() *report.Run {
	const mib = int64(1) << 20
	gap := 12.5
	tracer := &report.Report{
		Header: report.Header{File: "tracer_rank0.json", Format: "tracer-json", Rank: 0, Iteration: -1, Devices: []int{0}},
		Part: &report.TracerReport{PeakBytes: 900 * mib, ListedBytes: 700 * mib, Tracer: &report.TracerView{Rank: 0, Device: "cuda:0", Devices: []report.TracerDeviceView{
			{Device: "cuda:0", PeakBytes: 900 * mib, ListedBytes: 700 * mib, GapBytes: 200 * mib, GapExplanation: "the file lists only tensors of at least 1 MiB",
				Tensors: 12, SmallestListedBytes: 1 * mib, InferredMinMemoryMB: 1, ReleasedTensors: 3,
				Phases: []report.PhaseStat{{Name: "forward", Bytes: 500 * mib, Count: 8, SharePct: 71.43}, {Name: "backward", Bytes: 200 * mib, Count: 4, SharePct: 28.57}},
				Modules: []report.ModuleStat{{Pattern: "model.layers.*.mlp", Bytes: 400 * mib, Count: 6, MergedModules: 3, SharePct: 57.14},
					{Pattern: report.UnknownModule, Bytes: 300 * mib, Count: 6, MergedModules: 1, SharePct: 42.86}},
				Categories: []report.CategoryStat{{Name: "Activation", Bytes: 700 * mib, Count: 12}},
				Sites:      []report.TracerSite{{Site: "model.py:40:forward", Category: "Activation", Bytes: 400 * mib, Count: 6, Phases: []string{"forward"}}},
				Top:        []report.TracerTensorRow{{Bytes: 100 * mib, Shape: "[4096, 1, 6400]", Module: "model.layers.0.mlp", Phase: "forward", Category: "Activation", Site: "model.py:40:forward"}},
			},
			{Device: "cpu", PeakBytes: 10 * mib, ListedBytes: 10 * mib},
		}}},
	}
	timeline := &report.Report{
		Header: report.Header{File: "trace.memory_timeline.json.gz", Format: "memory-timeline", Rank: -1, Iteration: -1},
		Part: &report.TimelineReport{MemoryTimeline: &report.TimelineView{Form: "raw", Points: 500, Events: 1200, Categories: []string{"PARAMETER", "ACTIVATION"}, MemscanCategories: []string{"Parameters/Weights", "Activation"},
			StartUS: 1_000_000, EndUS: 3_500_000, PeakBytes: 3000 * mib, PeakTimeUS: 2_000_000, PeakIndex: 250,
			PeakComposition: []report.CategoryStat{{Name: "ACTIVATION", Bytes: 2000 * mib}, {Name: "PARAMETER", Bytes: 1000 * mib}},
			CategoryMax:     []report.CategoryStat{{Name: "ACTIVATION", Bytes: 2100 * mib}, {Name: "PARAMETER", Bytes: 1000 * mib}},
			FinalBytes:      1000 * mib}},
	}
	log := &report.Report{
		Header: report.Header{File: "train.log", Format: "megatron-log", Rank: -1, Iteration: -1},
		Part: &report.LogReport{Log: &report.LogView{Dialect: "megatron", Lines: 4000, Records: 20, PeakAllocatedBytes: 60_000 * mib, PeakReservedBytes: -1,
			PeakRank: 3, PeakIteration: 10, PeakAllocatedRank: 3, PeakAllocatedIteration: 10, ReservedImbalancePct: 4.2,
			// Megatron prints the activation and total estimates only for some configurations; −1 is "not printed".
			Theoretical:  &report.LogTheoretical{Line: 12, Rank: 0, WeightAndOptimizerByte: 40_000 * mib, ActivationBytes: -1, TotalBytes: -1},
			TheoryGapPct: &gap,
			Ranks: []report.LogRankRow{{Rank: 0, Records: 10, FirstIteration: 1, LastIteration: 10, MaxAllocated: 58_000 * mib, MaxReserved: -1, LastAllocated: 57_000 * mib, LastReserved: -1},
				{Rank: 3, Records: 10, FirstIteration: 1, LastIteration: 10, MaxAllocated: 60_000 * mib, MaxReserved: -1, LastAllocated: 59_000 * mib, LastReserved: -1}}}},
	}
	inputs := []*report.Report{tracer, timeline, log}
	return &report.Run{Version: report.ReportVersion, Tool: "memscan 0.1.0", Inputs: inputs, Cross: analyze.CrossInputs(inputs)}
}

// repeatedRun is one snapshot whose largest allocations repeat, as real snapshots' do: 6 identical optimizer
// blocks, 3 identical weights on two devices, and one of a kind.
func repeatedRun() *report.Run {
	r := sampleReport("iteration_1/rank0_memory_snapshot.pickle", 0, 1)
	r.Top = nil
	add := func(n int, a report.Allocation) {
		for i := range n {
			a.Address = uint64(0x7f0000000000 + len(r.Top)<<20)
			a.Device = i % 2
			r.Top = append(r.Top, a)
		}
	}
	add(1, report.Allocation{Size: 64 << 20, RequestedSize: 64 << 20, State: "active_allocated", Category: "Parameters/Weights", Site: "model.py:92:__init__"})
	add(6, report.Allocation{Size: 4 << 20, RequestedSize: 4 << 20, State: "active_allocated", Category: "Optimizer State", Site: "train.py:66:main"})
	add(3, report.Allocation{Size: 4 << 20, RequestedSize: 4 << 20, State: "active_allocated", Category: "Parameters/Weights", Site: "model.py:45:__init__"})
	add(1, report.Allocation{Size: 4 << 20, RequestedSize: 4<<20 - 512, State: "active_allocated", Category: "Optimizer State", Site: "train.py:66:main"})
	return &report.Run{Version: report.ReportVersion, Tool: "memscan 0.1.0", Inputs: []*report.Report{r}}
}
