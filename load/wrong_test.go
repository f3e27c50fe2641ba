package load_test

import (
	"archive/zip"
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/memscan/memscan/internal/input"
	"github.com/memscan/memscan/internal/testutil"
	"github.com/memscan/memscan/load"
)

// zipWith returns a zip archive whose entries are names, in order, as torch.save (PyTorchStreamWriter) writes
// data.pkl first under the archive's folder.
func zipWith(t *testing.T, names ...string) []byte {
	t.Helper()
	var b bytes.Buffer
	zw := zip.NewWriter(&b)
	for _, n := range names {
		w, err := zw.Create(n)
		if err != nil {
			t.Fatal(err)
		}
		w.Write([]byte("\x80\x02}q\x00."))
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// torchMagic is torch.save's magic number 0x1950a86a20f9469cfc6c pickled with LONG1 (opcode 0x8a, 10 bytes, little
// endian), as pickle.dump writes it.
const torchMagic = "\x8a\x0a\x6c\xfc\x9c\x46\xf9\x20\x6a\xa8\x50\x19"

const (
	record   = `record a memory snapshot instead: torch.cuda.memory._record_memory_history(max_entries=100000) before the steps, torch.cuda.memory._dump_snapshot("snapshot.pickle") after them`
	readable = `memscan reads torch.cuda.memory._dump_snapshot pickles (or their JSON), memory-tracer peak JSON, prof.export_memory_timeline JSON and training logs`
	chrome   = `x: a torch.profiler trace (Chrome trace JSON: operator and kernel timings), not a memory snapshot; export the memory timeline from the same profiler, prof.export_memory_timeline("memory_timeline.json", device="cuda:0") with profile_memory=True, record_shapes=True and with_stack=True, and give memscan that file; or ` + record
)

// TestRecognisedWrongInputs: the files people give memscan that are something else are named for what they are,
// with what to give it instead, in one line without the decoder's byte offsets, and still read as unrecognised
// content to callers that only ask that.
func TestRecognisedWrongInputs(t *testing.T) {
	cases := []struct {
		name    string
		content []byte
		want    string
	}{
		{"kineto trace", []byte(`{"schemaVersion": 1, "deviceProperties": [], "traceEvents": [{"ph": "X", "name": "aten::mm"}]}`), chrome},
		{"chrome trace", []byte(`{"traceEvents": [{"ph": "X", "name": "aten::mm", "ts": 1, "dur": 2}]}`), chrome},
		{"chrome trace gzipped", testutil.Gzip([]byte(`{"traceEvents": []}`)), chrome},
		{"torch.save", zipWith(t, "model/data.pkl", "model/.format_version", "model/data/0", "model/version"),
			"x: a torch.save file (a zip archive holding data.pkl: a checkpoint or saved tensors), not a memory snapshot; " + record},
		{"torch.save of a stream", zipWith(t, "archive/data.pkl", "archive/byteorder"),
			"x: a torch.save file (a zip archive holding data.pkl: a checkpoint or saved tensors), not a memory snapshot; " + record},
		{"other zip", zipWith(t, "notes.txt"), `x: a zip archive (first entry "notes.txt"), not a snapshot, tracer file, memory timeline or log; unpack it and give memscan the files inside`},
		{"legacy torch.save", []byte("\x80\x02" + torchMagic + ".\x80\x02M\xe9\x03."),
			"x: a torch.save file (the pickle format before PyTorch 1.6: a checkpoint or saved tensors), not a memory snapshot; " + record},
		{"legacy torch.save, protocol 4", []byte("\x80\x04\x95\x0d\x00\x00\x00\x00\x00\x00\x00" + torchMagic + "."),
			"x: a torch.save file (the pickle format before PyTorch 1.6: a checkpoint or saved tensors), not a memory snapshot; " + record},
		{"other object", []byte(`{"not": "a snapshot"}`),
			`x: JSON that is no input memscan reads: its first key "not" holds string "a snapshot", where a memory-tracer file holds a device's {"peak_memory_mb", "tensors"} and a snapshot has "segments"; ` + readable},
		{"object of objects", []byte(`{"model": {"hidden_size": 4096}}`),
			`x: JSON that is no input memscan reads: its first key "model" holds an object without peak_memory_mb or tensors, where a memory-tracer file holds a device's {"peak_memory_mb", "tensors"} and a snapshot has "segments"; ` + readable},
		{"list of numbers", []byte(`[1, 2, 3]`),
			`x: JSON that is no input memscan reads: a list whose first element is number 1, where a memory timeline holds lists ([times, sizes]) and a snapshot segments (objects); ` + readable},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := load.Decode(context.Background(), "x", bytes.NewReader(tc.content))
			if err == nil || err.Error() != tc.want {
				t.Fatalf("err\n%v\nwant\n%s", err, tc.want)
			}
			var wrong *input.WrongInputError
			if !errors.As(err, &wrong) || !errors.Is(err, input.ErrUnknownContent) {
				t.Errorf("%T is not a WrongInputError that reads as unrecognised content", err)
			}
		})
	}
}

// TestTracerFileErrorsStayPrecise: a file whose first key names a device is a tracer file, so what is wrong in it
// keeps its JSON path and byte offset instead of reading as another tool's JSON.
func TestTracerFileErrorsStayPrecise(t *testing.T) {
	for doc, want := range map[string]string{
		`{"cuda:0": 5}`:                "x: byte 12: cuda:0: want an object, got number 5",
		`{"cpu": {"tensors": []}}`:     "x: byte 23: cpu: missing peak_memory_mb",
		`{"x": {"peak_memory_mb": 1}}`: "x: byte 27: x: missing tensors",
		`{"cuda:0": {"peak_memory_mb": 1, "tensors": []}, "b": 3}`: "x: byte 55: b: want an object, got number 3",
	} {
		_, err := load.Decode(context.Background(), "x", strings.NewReader(doc))
		if err == nil || err.Error() != want {
			t.Errorf("%s: err %v, want %s", doc, err, want)
		}
	}
}
