package tracer_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/memscan/memscan/internal/input"
	"github.com/memscan/memscan/internal/testutil"
	"github.com/memscan/memscan/load"
	"github.com/memscan/memscan/snapshot"
	"github.com/memscan/memscan/tracer"
)

func decodeTracerFile(t *testing.T, path string) *load.Input {
	t.Helper()
	in, err := load.DecodeFile(context.Background(), path)
	if err != nil {
		t.Fatalf("decode %s: %v", path, err)
	}
	if in.Format != tracer.Format || in.Tracer == nil {
		t.Fatalf("decode %s: format %q, tracer %v", path, in.Format, in.Tracer != nil)
	}
	return in
}

// TestTracerFixture checks every key of the schema on the hand-written fixture; the expected values are the ones
// written into it (see the generator comment in testdata/).
func TestTracerFixture(t *testing.T) {
	in := decodeTracerFile(t, filepath.Join("testdata", "small_rank0.json"))
	tr := in.Tracer
	if tr.Rank != 0 {
		t.Errorf("rank = %d, want 0 (from small_rank0.json)", tr.Rank)
	}
	if len(tr.Devices) != 2 || tr.Devices[0].Name != "cuda:0" || tr.Devices[1].Name != "cpu" {
		t.Fatalf("devices = %+v, want cuda:0 then cpu in file order", tr.Devices)
	}
	cuda, cpu := &tr.Devices[0], &tr.Devices[1]
	// 12.5 MiB = 12.5 × 1048576 = 13107200 bytes; cpu 0.000762939453125 MiB = 800 bytes.
	if cuda.PeakBytes != 13107200 || cuda.PeakMB != 12.5 {
		t.Errorf("cuda peak = %d bytes (%v MiB), want 13107200 (12.5)", cuda.PeakBytes, cuda.PeakMB)
	}
	if cpu.PeakBytes != 800 || len(cpu.Tensors) != 0 {
		t.Errorf("cpu = %d bytes, %d tensors, want 800 and none", cpu.PeakBytes, len(cpu.Tensors))
	}
	if cuda.Ordinal() != 0 || cpu.Ordinal() != -1 || !cuda.IsCUDA() || cpu.IsCUDA() {
		t.Errorf("ordinals %d %d", cuda.Ordinal(), cpu.Ordinal())
	}
	// 4194304 + 2×2097152 + 2×1048576 + 524288 + 262144 = 11272192.
	if got := cuda.ListedBytes(); got != 11272192 {
		t.Errorf("listed = %d, want 11272192", got)
	}
	if len(cuda.Tensors) != 7 {
		t.Fatalf("tensors = %d, want 7", len(cuda.Tensors))
	}
	t0 := cuda.Tensors[0]
	if t0.SizeBytes != 4194304 || t0.SizeMB != 4 || t0.Shape != "torch.Size([1048576])" || !reflect.DeepEqual(t0.Dims, []int64{1048576}) ||
		t0.Module != "Unknown" || t0.Phase != "setup_model_and_optimizer" || t0.Release != nil {
		t.Errorf("tensor 0 = %+v", t0)
	}
	// The creation stack is 2 user frames + 7 tracer frames, stored innermost first.
	if t0.Create == nil || len(t0.Create.Frames) != 9 {
		t.Fatalf("tensor 0 create stack = %+v", t0.Create)
	}
	if f := t0.Create.Frames[0]; f.Name != "track_tensor_memory" || f.Line != 206 {
		t.Errorf("innermost frame = %+v, want the tracer's track_tensor_memory", f)
	}
	first := t0.Create.FirstUserFrame()
	if first != 7 {
		t.Errorf("first user frame = %d, want 7 (the 7 tracer frames skipped)", first)
	}
	want := snapshot.Frame{Filename: "/home/user/buffers.py", Line: 12, Name: "__init__"}
	if got := t0.Create.Frames[first]; got != want || t0.Create.Code[first] != "self.grad_data = torch.zeros(n, device='cuda')" {
		t.Errorf("user frame = %+v %q, want %+v", got, t0.Create.Code[first], want)
	}
	if f := t0.Create.Frames[8]; f.Name != "<module>" || f.Filename != "/home/user/train.py" || f.Line != 40 {
		t.Errorf("outermost frame = %+v", f)
	}
	// The release stack is the 2 tracer frames of a finalizer: no user frame.
	t1 := cuda.Tensors[1]
	if t1.Release == nil || len(t1.Release.Frames) != 2 || t1.Release.FirstUserFrame() != 2 {
		t.Errorf("tensor 1 release = %+v", t1.Release)
	}
	// Identical stacks share one pointer (tensors 1 and 2 were created by the same line).
	if cuda.Tensors[1].Create != cuda.Tensors[2].Create || cuda.Tensors[1].Release != cuda.Tensors[2].Release {
		t.Error("identical stacks are not shared")
	}
	// A frame without its source line (net.py:30) parses with an empty code line.
	t3 := cuda.Tensors[3].Create
	if f := t3.Frames[t3.FirstUserFrame()]; f.Filename != "/home/user/net.py" || f.Line != 30 || t3.Code[t3.FirstUserFrame()] != "" {
		t.Errorf("frame without source = %+v %q", f, t3.Code[t3.FirstUserFrame()])
	}
	if s := cuda.Tensors[6]; s.Dims == nil || len(s.Dims) != 0 || s.Numel() != 1 {
		t.Errorf("scalar shape = %v numel %d, want [] and 1", s.Dims, s.Numel())
	}
	// 2097152 bytes / (1024×512) elements = 4-byte elements.
	if e := cuda.Tensors[1].ElementBytes(); e != 4 {
		t.Errorf("element bytes = %d, want 4", e)
	}
}

func TestParseShape(t *testing.T) {
	tests := []struct {
		in   string
		want []int64
		ok   bool
	}{
		{"torch.Size([4096, 1, 2048])", []int64{4096, 1, 2048}, true},
		{"torch.Size([])", []int64{}, true},
		{"[3, 4]", []int64{3, 4}, true},
		{"(5,)", []int64{5}, true},
		{"torch.Size([4096, -1])", nil, false},
		{"torch.Size([4096, x])", nil, false},
		{"torch.Size([1]", nil, false},
		{"", nil, false},
		{"4096", nil, false},
	}
	for _, tc := range tests {
		got, ok := tracer.ParseShape(tc.in)
		if ok != tc.ok || !reflect.DeepEqual(got, tc.want) {
			t.Errorf("ParseShape(%q) = %v, %v; want %v, %v", tc.in, got, ok, tc.want, tc.ok)
		}
	}
}

func TestRankFromPath(t *testing.T) {
	tests := []struct {
		path string
		rank int
		ok   bool
	}{
		{"tracer_rank3.json", 3, true},
		{"out/rank_12/peak.json", 12, true},
		{"out/Rank-7.json", 7, true},
		{"qwen_TP2_PP4_r5_peak.json", 5, true},
		{"r2.json", 2, true},
		{"runs/rank1/iter3/peak_r4.json", 4, true}, // the file name wins over directories
		{"iter3/peak.json", -1, false},
		{"gpt_r3d.json", -1, false},
		{"", -1, false},
	}
	for _, tc := range tests {
		got, ok := input.RankFromPath(tc.path)
		if got != tc.rank || ok != tc.ok {
			t.Errorf("RankFromPath(%q) = %d, %v; want %d, %v", tc.path, got, ok, tc.rank, tc.ok)
		}
	}
}

// TestTracerErrors checks that bad input gets one error naming the JSON path and a byte offset.
func TestTracerErrors(t *testing.T) {
	tensor := func(body string) string {
		return `{"cuda:0": {"peak_memory_mb": 1.0, "tensors": [{"size_bytes": 1048576, "size_mb": 1.0, "shape": "torch.Size([1])", "module": "m", "phase": "p", "create_stack_trace": [], "release_stack_trace": []}, {` + body + `}]}}`
	}
	tests := []struct {
		name, json, field, msg string
	}{
		{"negative size", tensor(`"size_bytes": -4`), "cuda:0.tensors[1].size_bytes", "negative (-4)"},
		{"string size", tensor(`"size_bytes": "4"`), "cuda:0.tensors[1].size_bytes", `want a number, got string "4"`},
		{"float size", tensor(`"size_bytes": 4.5`), "cuda:0.tensors[1].size_bytes", "not an integer (4.5)"},
		{"huge size", tensor(`"size_bytes": 99999999999999999999`), "cuda:0.tensors[1].size_bytes", "out of range"},
		{"negative size_mb", tensor(`"size_bytes": 4, "size_mb": -1`), "cuda:0.tensors[1].size_mb", "negative"},
		{"missing size", tensor(`"size_mb": 4`), "cuda:0.tensors[1]", "missing size_bytes"},
		{"module number", tensor(`"size_bytes": 4, "module": 3`), "cuda:0.tensors[1].module", "want a string, got number"},
		{"frame number", tensor(`"size_bytes": 4, "create_stack_trace": ["a", 7]`), "cuda:0.tensors[1].create_stack_trace", "want a string, got number"},
		{"stack object", tensor(`"size_bytes": 4, "release_stack_trace": {}`), "cuda:0.tensors[1].release_stack_trace", "want an array of strings, got object"},
		{"tensor not object", `{"cuda:0": {"peak_memory_mb": 1, "tensors": [3]}}`, "cuda:0.tensors[0]", "want an object, got number"},
		{"tensors object", `{"cuda:0": {"peak_memory_mb": 1, "tensors": {}}}`, "cuda:0.tensors", "want an array, got an object"},
		{"peak string", `{"cuda:0": {"peak_memory_mb": "1", "tensors": []}}`, "cuda:0.peak_memory_mb", "want a number"},
		{"peak negative", `{"cuda:0": {"peak_memory_mb": -2, "tensors": []}}`, "cuda:0.peak_memory_mb", "negative"},
		{"missing peak", `{"cuda:0": {"tensors": []}}`, "cuda:0", "missing peak_memory_mb"},
		{"missing tensors", `{"cuda:0": {"peak_memory_mb": 1}}`, "cuda:0", "missing tensors"},
		{"device not object", `{"cuda:0": 5}`, "cuda:0", "want an object, got number 5"},
		{"duplicate device", `{"cuda:0": {"peak_memory_mb": 1, "tensors": []}, "cuda:0": {"peak_memory_mb": 1, "tensors": []}}`, "cuda:0", "appears twice"},
		{"truncated", `{"cuda:0": {"peak_memory_mb": 1, "tensors": [{"size_bytes": 4`, "cuda:0.tensors[0]", "unexpected end of file"},
		{"malformed", `{"cuda:0": {"peak_memory_mb": 1, "tensors": [}}`, "cuda:0.tensors", "malformed JSON"},
		{"trailing", `{"cuda:0": {"peak_memory_mb": 1, "tensors": []}} {}`, "", "trailing data"},
		{"empty object", `{}`, "", "empty JSON object"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := load.Decode(context.Background(), "bad.json", strings.NewReader(tc.json))
			var de *input.Error
			if !errors.As(err, &de) {
				t.Fatalf("err = %v, want *input.Error", err)
			}
			if de.File != "bad.json" || de.Field != tc.field || !strings.Contains(de.Error(), tc.msg) {
				t.Errorf("err = %q (field %q), want field %q and %q", err, de.Field, tc.field, tc.msg)
			}
			if de.Offset < 0 || de.Offset > int64(len(tc.json)) {
				t.Errorf("offset %d outside the %d-byte input", de.Offset, len(tc.json))
			}
		})
	}
}

// TestTracerNegativeSizeMessage pins the exact one-line message users see.
func TestTracerNegativeSizeMessage(t *testing.T) {
	doc := `{"cuda:0": {"peak_memory_mb": 1, "tensors": [{"size_bytes": -4}]}}`
	_, err := load.Decode(context.Background(), "t.json", strings.NewReader(doc))
	// The offset is the start of the tensor record holding the bad value.
	want := "t.json: byte " + strconv.Itoa(strings.Index(doc, `{"size_bytes": -4`)) + ": cuda:0.tensors[0].size_bytes: negative (-4)"
	if err == nil || err.Error() != want {
		t.Errorf("err = %v\nwant %s", err, want)
	}
}

// TestTracerUnknownKeysSkipped checks forward compatibility: unknown keys at every level are ignored.
func TestTracerUnknownKeysSkipped(t *testing.T) {
	doc := `{"cuda:0": {"extra": {"a": [1, {"b": null}]}, "peak_memory_mb": 2, "tensors": [{"size_bytes": 1048576, "new_key": [1, 2], "phase": "x"}]}}`
	in, err := load.Decode(context.Background(), "x.json", strings.NewReader(doc))
	if err != nil {
		t.Fatal(err)
	}
	d := in.Tracer.Devices[0]
	if d.PeakBytes != 2<<20 || len(d.Tensors) != 1 || d.Tensors[0].SizeBytes != 1048576 || d.Tensors[0].Phase != "x" {
		t.Errorf("device = %+v", d)
	}
}

// TestTracerValueBound checks that one enormous string cannot make the decoder buffer without limit.
func TestTracerValueBound(t *testing.T) {
	if testing.Short() {
		t.Skip("allocates about 70 MB")
	}
	big := strings.Repeat("x", 70<<20)
	doc := `{"cuda:0": {"peak_memory_mb": 1, "tensors": [{"size_bytes": 1, "shape": "` + big + `"}]}}`
	_, err := testutil.Bounded(t, func(ctx context.Context) (*load.Input, error) {
		return load.Decode(ctx, "big.json", strings.NewReader(doc))
	})
	var de *input.Error
	if !errors.As(err, &de) || !strings.Contains(de.Msg, "larger than 64 MiB") {
		t.Errorf("err = %v, want the 64 MiB value limit", err)
	}
}

// TestTracerSharedExamples decodes the documented example files: 43 tensors on cuda:0 and an empty cpu entry.
func TestTracerSharedExamples(t *testing.T) {
	dir := testutil.SharedDir(t, "docs", "examples")
	for _, tc := range []struct {
		file string
		rank int
	}{{"tracer_rank0.json", 0}, {"tracer_rank1.json", 1}} {
		in := decodeTracerFile(t, filepath.Join(dir, tc.file))
		raw, err := os.ReadFile(filepath.Join(dir, tc.file))
		if err != nil {
			t.Fatal(err)
		}
		// Independent oracle: encoding/json's generic decode of the same file.
		var v map[string]struct {
			Peak    float64 `json:"peak_memory_mb"`
			Tensors []struct {
				Size   int64    `json:"size_bytes"`
				Module string   `json:"module"`
				Create []string `json:"create_stack_trace"`
			} `json:"tensors"`
		}
		if err := json.Unmarshal(raw, &v); err != nil {
			t.Fatal(err)
		}
		if in.Tracer.Rank != tc.rank || len(in.Tracer.Devices) != len(v) {
			t.Fatalf("%s: rank %d, %d devices", tc.file, in.Tracer.Rank, len(in.Tracer.Devices))
		}
		for _, d := range in.Tracer.Devices {
			w := v[d.Name]
			if d.PeakMB != w.Peak || len(d.Tensors) != len(w.Tensors) {
				t.Errorf("%s %s: peak %v, %d tensors; want %v, %d", tc.file, d.Name, d.PeakMB, len(d.Tensors), w.Peak, len(w.Tensors))
				continue
			}
			var sum, wsum int64
			for i, tt := range d.Tensors {
				sum += tt.SizeBytes
				wsum += w.Tensors[i].Size
				if tt.Module != w.Tensors[i].Module || len(tt.Create.Frames) != len(w.Tensors[i].Create) {
					t.Errorf("%s tensor %d differs", tc.file, i)
				}
				// Every creation stack of the tracer ends with exactly its 7 own frames.
				if got := tt.Create.FirstUserFrame(); got != 7 {
					t.Errorf("%s tensor %d: %d tracer frames, want 7", tc.file, i, got)
				}
			}
			if sum != wsum {
				t.Errorf("%s: listed %d, want %d", tc.file, sum, wsum)
			}
		}
	}
}
