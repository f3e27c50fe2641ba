package report

import (
	"bytes"
	"encoding/json"
	"maps"
	"slices"

	"github.com/vmihailenco/msgpack/v5"

	"github.com/memscan/memscan/findings"
	"github.com/memscan/memscan/phases"
)

// reportWire is the JSON and msgpack form of a Report: one flat object whose field order, names and omitempty
// rules are those of summary.json inputs[] and report.msgpack (contracts, see the design doc). The per-kind
// parts of Report regroup these fields; this struct keeps their order, which interleaves the groups.
type reportWire struct {
	wireHead `msgpack:",inline"`

	// The two lists that grow with a trace's length sit between the head and the tail, so that summary.json can
	// be streamed around them (Run.EncodeJSON) without changing the field order.
	Iterations     timelines     `json:"iterations,omitempty" msgpack:"iterations,omitempty"`
	IterationTable iterationRows `json:"iteration_table,omitempty" msgpack:"iteration_table,omitempty"`

	wireTail `msgpack:",inline"`
}

// wireHead is the wire form's fields before the per-iteration lists.
type wireHead struct {
	File        string `json:"file" msgpack:"file"`
	Format      string `json:"format" msgpack:"format"`
	TorchFormat string `json:"torch_format" msgpack:"torch_format"`
	Rank        int    `json:"rank" msgpack:"rank"`
	Iteration   int    `json:"iteration" msgpack:"iteration"`
	Devices     []int  `json:"devices" msgpack:"devices"`

	Totals

	PerDevice      []GroupTotals `json:"per_device,omitempty" msgpack:"per_device,omitempty"`
	PerStream      []GroupTotals `json:"per_stream,omitempty" msgpack:"per_stream,omitempty"`
	PerPool        []GroupTotals `json:"per_pool,omitempty" msgpack:"per_pool,omitempty"`
	PerSegmentType []GroupTotals `json:"per_segment_type,omitempty" msgpack:"per_segment_type,omitempty"`

	Categories    []CategoryStat `json:"categories" msgpack:"categories"`
	Top           []Allocation   `json:"top" msgpack:"top"`
	Sites         []SiteStat     `json:"sites,omitempty" msgpack:"sites,omitempty"`
	ActiveSizes   []SizeBucket   `json:"active_size_histogram,omitempty" msgpack:"active_size_histogram,omitempty"`
	FreeSizes     []SizeBucket   `json:"free_size_histogram,omitempty" msgpack:"free_size_histogram,omitempty"`
	Fragmentation Fragmentation  `json:"fragmentation" msgpack:"fragmentation"`

	Timeline    []TimelineSeries `json:"-" msgpack:"timeline,omitempty"`
	Peak        *Peak            `json:"peak,omitempty" msgpack:"peak,omitempty"`
	DevicePeaks []Peak           `json:"device_peaks,omitempty" msgpack:"device_peaks,omitempty"`
	OOMs        []OOM            `json:"ooms" msgpack:"ooms"`
}

// wireTail is the wire form's fields after the per-iteration lists.
type wireTail struct {
	LeakSuspects []LeakSuspect `json:"leak_suspects,omitempty" msgpack:"leak_suspects,omitempty"`
	TraceActions actionCounts  `json:"trace_actions,omitempty" msgpack:"trace_actions,omitempty"`

	AllocatorReplay        *AllocatorReplay  `json:"allocator_replay,omitempty" msgpack:"allocator_replay,omitempty"`
	AllocatorReplayDevices []AllocatorReplay `json:"allocator_replay_devices,omitempty" msgpack:"allocator_replay_devices,omitempty"`

	Recommendations []findings.Finding `json:"recommendations" msgpack:"recommendations"`
	Warnings        []string           `json:"warnings" msgpack:"warnings"`

	PeakBytes      int64         `json:"peak_bytes,omitempty" msgpack:"peak_bytes,omitempty"`
	ListedBytes    int64         `json:"listed_bytes,omitempty" msgpack:"listed_bytes,omitempty"`
	Phases         []PhaseStat   `json:"phases,omitempty" msgpack:"phases,omitempty"`
	Modules        []ModuleStat  `json:"modules,omitempty" msgpack:"modules,omitempty"`
	Tracer         *TracerView   `json:"tracer,omitempty" msgpack:"tracer,omitempty"`
	MemoryTimeline *TimelineView `json:"memory_timeline,omitempty" msgpack:"memory_timeline,omitempty"`
	Log            *LogView      `json:"log,omitempty" msgpack:"log,omitempty"`
}

func (r *Report) wire() *reportWire {
	h := &r.Header
	w := &reportWire{
		wireHead: wireHead{File: h.File, Format: h.Format, TorchFormat: h.TorchFormat, Rank: h.Rank, Iteration: h.Iteration,
			Devices: h.Devices, Categories: h.Categories, Top: h.Top, Sites: h.Sites, Peak: h.Peak,
			// Inputs without a device trace have always written "ooms": [] (an empty msgpack array, not nil).
			OOMs: []OOM{}},
		wireTail: wireTail{Recommendations: h.Recommendations, Warnings: h.Warnings},
	}
	switch p := r.Part.(type) {
	case *SnapshotReport:
		w.Totals = p.Totals
		w.PerDevice, w.PerStream, w.PerPool, w.PerSegmentType = p.PerDevice, p.PerStream, p.PerPool, p.PerSegmentType
		w.ActiveSizes, w.FreeSizes, w.Fragmentation = p.ActiveSizes, p.FreeSizes, p.Fragmentation
		w.Timeline, w.DevicePeaks, w.OOMs, w.Iterations = p.Timeline, p.DevicePeaks, p.OOMs, timelines(p.Iterations)
		w.LeakSuspects, w.TraceActions, w.IterationTable = p.LeakSuspects, actionCounts(p.TraceActions), iterationRows(p.IterationTable)
		w.AllocatorReplay, w.AllocatorReplayDevices = p.AllocatorReplay, p.AllocatorReplayDevices
	case *TracerReport:
		w.PeakBytes, w.ListedBytes, w.Phases, w.Modules, w.Tracer = p.PeakBytes, p.ListedBytes, p.Phases, p.Modules, p.Tracer
	case *TimelineReport:
		w.MemoryTimeline = p.MemoryTimeline
	case *LogReport:
		w.Log = p.Log
	}
	return w
}

// report rebuilds a Report from its wire form. The flat form names no kind: the view only one kind sets tells it
// (tracer, then memory_timeline, then log); an object with none of them is a snapshot. The fields of the other
// kinds are zero in every object memscan has written, and are not kept.
func (w *reportWire) report() *Report {
	r := &Report{Header: Header{File: w.File, Format: w.Format, TorchFormat: w.TorchFormat, Rank: w.Rank,
		Iteration: w.Iteration, Devices: w.Devices, Categories: w.Categories, Top: w.Top, Sites: w.Sites, Peak: w.Peak,
		Recommendations: w.Recommendations, Warnings: w.Warnings}}
	switch {
	case w.Tracer != nil:
		r.Part = &TracerReport{PeakBytes: w.PeakBytes, ListedBytes: w.ListedBytes, Phases: w.Phases, Modules: w.Modules, Tracer: w.Tracer}
	case w.MemoryTimeline != nil:
		r.Part = &TimelineReport{MemoryTimeline: w.MemoryTimeline}
	case w.Log != nil:
		r.Part = &LogReport{Log: w.Log}
	default:
		r.Part = &SnapshotReport{Totals: w.Totals,
			PerDevice: w.PerDevice, PerStream: w.PerStream, PerPool: w.PerPool, PerSegmentType: w.PerSegmentType,
			ActiveSizes: w.ActiveSizes, FreeSizes: w.FreeSizes, Fragmentation: w.Fragmentation,
			Timeline: w.Timeline, DevicePeaks: w.DevicePeaks, OOMs: w.OOMs, Iterations: []phases.Timeline(w.Iterations),
			LeakSuspects: w.LeakSuspects, TraceActions: map[string]int(w.TraceActions), IterationTable: []IterationRow(w.IterationTable),
			AllocatorReplay: w.AllocatorReplay, AllocatorReplayDevices: w.AllocatorReplayDevices}
	}
	return r
}

// MarshalJSON writes r as one flat object, as summary.json has always held it. HTML characters stay as they
// are ("<module>" frames), matching the summary writer, which the enclosing encoder cannot pass down.
func (r *Report) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(r.wire()); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}

// UnmarshalJSON reads one flat summary.json input object back into its kind.
func (r *Report) UnmarshalJSON(data []byte) error {
	var w reportWire
	if err := json.Unmarshal(data, &w); err != nil {
		return err
	}
	*r = *w.report()
	return nil
}

// EncodeMsgpack writes r as one flat map, as report.msgpack has always held it.
func (r *Report) EncodeMsgpack(enc *msgpack.Encoder) error {
	return enc.Encode(r.wire())
}

// DecodeMsgpack reads one flat report.msgpack input back into its kind.
func (r *Report) DecodeMsgpack(dec *msgpack.Decoder) error {
	var w reportWire
	if err := dec.Decode(&w); err != nil {
		return err
	}
	*r = *w.report()
	return nil
}

// actionCounts is trace_actions on the wire. encoding/json sorts map keys; msgpack does not for map[string]int,
// so it is written in key order here to keep report.msgpack byte-identical for identical input.
type actionCounts map[string]int

// EncodeMsgpack writes the counts as a map in increasing key order.
func (a actionCounts) EncodeMsgpack(enc *msgpack.Encoder) error {
	if a == nil {
		return enc.EncodeNil()
	}
	if err := enc.EncodeMapLen(len(a)); err != nil {
		return err
	}
	for _, k := range slices.Sorted(maps.Keys(a)) {
		if err := enc.EncodeString(k); err != nil {
			return err
		}
		if err := enc.EncodeInt(int64(a[k])); err != nil {
			return err
		}
	}
	return nil
}
