package analyze

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"testing"

	"github.com/memscan/memscan/report"
	"github.com/vmihailenco/msgpack/v5"
)

// TestReportWireRoundTrip analyzes one committed input of each kind, writes it as report.msgpack and summary.json
// would, reads it back and checks that the kind is rebuilt from the fields present, that the kind's part survives,
// and that writing the decoded report again gives the same bytes.
func TestReportWireRoundTrip(t *testing.T) {
	tests := []struct {
		file string
		kind string
	}{
		{"../testdata/example/rank0_memory_snapshot.pickle", report.KindSnapshot},
		{"../tracer/testdata/small_rank0.json", report.KindTracer},
		{"../memtimeline/testdata/small_memory_timeline.json", report.KindTimeline},
		{"../trainlog/testdata/megatron.log", report.KindLog},
	}
	for _, tc := range tests {
		t.Run(filepath.Base(tc.file), func(t *testing.T) {
			rep, err := AnalyzeFile(context.Background(), tc.file, Options{})
			if err != nil {
				t.Fatal(err)
			}
			if rep.Kind() != tc.kind {
				t.Fatalf("analyzed kind %q, want %q", rep.Kind(), tc.kind)
			}
			if reflect.ValueOf(rep.Part).Elem().IsZero() {
				t.Fatalf("the %s part of the analyzed report is empty", tc.kind)
			}

			encode := func(w *bytes.Buffer, r *report.Report) {
				if err := msgpack.NewEncoder(w).Encode(r); err != nil {
					t.Fatal(err)
				}
			}
			var mp bytes.Buffer
			encode(&mp, rep)
			var back report.Report
			if err := msgpack.NewDecoder(bytes.NewReader(mp.Bytes())).Decode(&back); err != nil {
				t.Fatalf("decoding msgpack: %v", err)
			}
			if back.Kind() != tc.kind {
				t.Errorf("msgpack decoded kind %q, want %q", back.Kind(), tc.kind)
			}
			// trace_actions is written in key order, so the whole report must re-encode to the same bytes.
			var again bytes.Buffer
			encode(&again, &back)
			if !bytes.Equal(mp.Bytes(), again.Bytes()) {
				i := 0
				for i < min(mp.Len(), again.Len()) && mp.Bytes()[i] == again.Bytes()[i] {
					i++
				}
				t.Errorf("msgpack round trip changed the bytes from byte %d (%d then %d bytes): %q vs %q", i, mp.Len(), again.Len(),
					mp.Bytes()[max(0, i-40):min(mp.Len(), i+20)], again.Bytes()[max(0, i-40):min(again.Len(), i+20)])
			}

			js, err := json.Marshal(rep)
			if err != nil {
				t.Fatal(err)
			}
			var jback report.Report
			if err := json.Unmarshal(js, &jback); err != nil {
				t.Fatalf("decoding JSON: %v", err)
			}
			if jback.Kind() != tc.kind {
				t.Errorf("JSON decoded kind %q, want %q", jback.Kind(), tc.kind)
			}
			js2, err := json.Marshal(&jback)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(js, js2) {
				t.Errorf("JSON round trip changed the bytes:\n%s\n%s", js, js2)
			}
		})
	}
}

// TestReportWireFlat checks the wire form is the one flat object of the contract: the header, then the
// allocator totals inlined, with "ooms" and the list fields present for every kind, and the fields in contract
// order however Report groups them.
func TestReportWireFlat(t *testing.T) {
	tests := []struct {
		name string
		rep  *report.Report
		keys []string
	}{
		{"tracer", &report.Report{Header: report.Header{File: "t.json", Format: "tracer-json", Rank: 0, Iteration: -1},
			Part: &report.TracerReport{PeakBytes: 10, ListedBytes: 8, Tracer: &report.TracerView{}}},
			[]string{"file", "format", "torch_format", "rank", "iteration", "devices", "reserved_bytes", "allocated_bytes",
				"requested_bytes", "active_bytes", "inactive_bytes", "internal_free_bytes", "external_free_bytes",
				"efficiency_pct", "largest_free_block_bytes", "segments", "blocks", "categories", "top", "fragmentation",
				"ooms", "recommendations", "warnings", "peak_bytes", "listed_bytes", "tracer"}},
		{"snapshot", &report.Report{Header: report.Header{File: "s.pickle", Peak: &report.Peak{Bytes: 5}},
			Part: &report.SnapshotReport{Totals: report.Totals{ReservedBytes: 7}, OOMs: []report.OOM{{Device: 1}}}},
			[]string{"file", "format", "torch_format", "rank", "iteration", "devices", "reserved_bytes", "allocated_bytes",
				"requested_bytes", "active_bytes", "inactive_bytes", "internal_free_bytes", "external_free_bytes",
				"efficiency_pct", "largest_free_block_bytes", "segments", "blocks", "categories", "top", "fragmentation",
				"peak", "ooms", "recommendations", "warnings"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var mp bytes.Buffer
			if err := msgpack.NewEncoder(&mp).Encode(tc.rep); err != nil {
				t.Fatal(err)
			}
			dec := msgpack.NewDecoder(bytes.NewReader(mp.Bytes()))
			n, err := dec.DecodeMapLen()
			if err != nil {
				t.Fatal(err)
			}
			var keys []string
			var ooms any
			for range n {
				k, err := dec.DecodeString()
				if err != nil {
					t.Fatal(err)
				}
				v, err := dec.DecodeInterface()
				if err != nil {
					t.Fatal(err)
				}
				if k == "ooms" {
					ooms = v
				}
				keys = append(keys, k)
			}
			if !slices.Equal(keys, tc.keys) {
				t.Errorf("msgpack keys\n got %q\nwant %q", keys, tc.keys)
			}
			if ooms == nil {
				t.Errorf("ooms is nil; every kind writes a list")
			}
		})
	}
}

// TestReportWireEarlierRun reads testdata/four_kinds.report.msgpack, the report.msgpack that memscan analyze wrote
// for memtimeline/testdata/small_memory_timeline.json, snapshot/testdata/v22_oom.pickle,
// tracer/testdata/small_rank0.json and trainlog/testdata/megatron.log while Report still embedded
// every kind's fields. compare and merge read such files from earlier runs: each input must come back as its
// kind's part with the numbers of its input, and the run must encode to the same bytes again. The file pins the
// contract, so it is never regenerated.
func TestReportWireEarlierRun(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("testdata", "four_kinds.report.msgpack"))
	if err != nil {
		t.Fatal(err)
	}
	var run report.Run
	if err := msgpack.Unmarshal(raw, &run); err != nil {
		t.Fatal(err)
	}
	kinds := make([]string, len(run.Inputs))
	for i, r := range run.Inputs {
		kinds[i] = r.Kind()
	}
	// In the order analyze sorts the paths.
	if want := []string{report.KindTimeline, report.KindSnapshot, report.KindTracer, report.KindLog}; !slices.Equal(kinds, want) {
		t.Fatalf("kinds %q, want %q", kinds, want)
	}
	// v22_oom.pickle: one segment and a trace whose third event is an OOM asking for 80 GiB with 3 MiB free.
	s := partOf[*report.SnapshotReport](t, run.Inputs[1])
	if s.Segments != 1 || len(s.OOMs) != 1 || s.OOMs[0].RequestedBytes != 80<<30 || s.OOMs[0].DeviceFreeBytes != 3*MiB {
		t.Errorf("snapshot: %d segments, OOMs %+v", s.Segments, s.OOMs)
	}
	// small_rank0.json: cuda:0 peaks at peak_memory_mb 12.5, 12.5 × 2^20 bytes.
	if tr := partOf[*report.TracerReport](t, run.Inputs[2]); tr.PeakBytes != 13107200 || tr.Tracer.Device != "cuda:0" {
		t.Errorf("tracer: peak %d on %q", tr.PeakBytes, tr.Tracer.Device)
	}
	// small_memory_timeline.json: 3400 bytes at point 4 (see TestAnalyzeTimelineFixtures).
	if tl := partOf[*report.TimelineReport](t, run.Inputs[0]).MemoryTimeline; tl.PeakBytes != 3400 || tl.PeakIndex != 4 {
		t.Errorf("timeline: peak %d at %d", tl.PeakBytes, tl.PeakIndex)
	}
	// megatron.log: the highest "max allocated" is rank 0's 2623.57861328125 MB (× 2^20) after iteration 2.
	if lg := partOf[*report.LogReport](t, run.Inputs[3]).Log; lg.PeakAllocatedBytes != 2751021568 || lg.PeakAllocatedRank != 0 {
		t.Errorf("log: peak allocated %d on rank %d", lg.PeakAllocatedBytes, lg.PeakAllocatedRank)
	}
	// As results.WriteMsgpack encodes a run.
	var again bytes.Buffer
	enc := msgpack.NewEncoder(&again)
	enc.SetSortMapKeys(true)
	if err := enc.Encode(&run); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(raw, again.Bytes()) {
		i := 0
		for i < min(len(raw), again.Len()) && raw[i] == again.Bytes()[i] {
			i++
		}
		t.Errorf("re-encoding the earlier run changed its bytes from byte %d (%d then %d bytes)", i, len(raw), again.Len())
	}
}
