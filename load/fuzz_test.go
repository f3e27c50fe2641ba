package load

import (
	"bufio"
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/memscan/memscan/tracer"
	"github.com/memscan/memscan/trainlog"
)

func addFileSeeds(f *testing.F, pattern string) {
	files, _ := filepath.Glob(pattern)
	for _, p := range files {
		data, err := os.ReadFile(p)
		if err == nil && len(data) < 1<<20 {
			f.Add(data)
		}
	}
}

// FuzzDecodeRuntimeJSON feeds arbitrary bytes through the JSON decoder with seeds (tracer, timeline,
// snapshot JSON): it must never panic, and whatever it accepts must satisfy the model's invariants.
func FuzzDecodeRuntimeJSON(f *testing.F) {
	addFileSeeds(f, filepath.Join("..", "tracer", "testdata", "*.json"))
	addFileSeeds(f, filepath.Join("..", "memtimeline", "testdata", "*.json"))
	for _, s := range []string{
		`{"cuda:0": {"peak_memory_mb": 1, "tensors": [{"size_bytes": -4}]}}`,
		`{"cuda:0": {"peak_memory_mb": 1, "tensors": [{"size_bytes": 4, "shape": "torch.Size([2, 2])", "create_stack_trace": ["  File \"a.py\", line 1, in f\n    x\n"]}]}}`,
		`[[1, 2, 3], [[0, 1, 2], [0, 3, 4], [0, 5, 6]]]`,
		`[[-1, 1, 10, 0], [5000, 4, -10, 0]]`,
		`[[1]]`, `[]`, `{}`, `[{}]`, `{"segments": []}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		// The JSON decoder is called directly so the pickle and gzip paths (fuzzed on their own) stay out.
		in, err := decodeJSON(context.Background(), "fuzz.json", bufio.NewReader(bytes.NewReader(data)))
		if err != nil {
			return
		}
		checkRuntimeInput(t, in)
	})
}

// FuzzDecodeLog feeds arbitrary text through the log decoder.
func FuzzDecodeLog(f *testing.F) {
	addFileSeeds(f, filepath.Join("..", "trainlog", "testdata", "*.log"))
	f.Add([]byte("[Rank 3] (after 7 iterations) memory (MB) | allocated: 1e3 | max allocated: -2 | reserved: x | max reserved: 4\n"))
	f.Add([]byte("MA 1 GB Max_MA 2 GB CA 3 GB Max_CA 4 GB\nstep: 3 memory: 1.5GiB(2.0%)\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		lg, err := trainlog.Decode(context.Background(), "fuzz.log", bytes.NewReader(data))
		if err != nil {
			return
		}
		checkRuntimeInput(t, &Input{Log: lg})
	})
}

func checkRuntimeInput(t *testing.T, in *Input) {
	t.Helper()
	if tr := in.Tracer; tr != nil {
		for _, d := range tr.Devices {
			if d.PeakBytes < 0 {
				t.Fatalf("negative peak %d", d.PeakBytes)
			}
			for _, x := range d.Tensors {
				if x.SizeBytes < 0 || x.SizeMB < 0 {
					t.Fatalf("negative tensor size %+v", x)
				}
				for _, s := range []*tracer.Stack{x.Create, x.Release} {
					if s != nil && (len(s.Frames) != len(s.Code) || s.FirstUserFrame() > len(s.Frames)) {
						t.Fatalf("inconsistent stack %+v", s)
					}
				}
			}
		}
	}
	if tl := in.Timeline; tl != nil {
		if len(tl.TimesUS) == 0 || len(tl.Bytes) != len(tl.Categories) {
			t.Fatalf("timeline shape: %d times, %d series, %d categories", len(tl.TimesUS), len(tl.Bytes), len(tl.Categories))
		}
		for _, col := range tl.Bytes {
			if len(col) != len(tl.TimesUS) {
				t.Fatalf("series of %d points for %d times", len(col), len(tl.TimesUS))
			}
		}
	}
	if lg := in.Log; lg != nil {
		if len(lg.Records) == 0 && len(lg.Theoretical) == 0 {
			t.Fatal("log accepted without memory lines")
		}
		for _, r := range lg.Records {
			for _, b := range []int64{r.AllocatedBytes, r.MaxAllocatedBytes, r.ReservedBytes, r.MaxReservedBytes, r.DeviceUsageBytes} {
				if b < -1 {
					t.Fatalf("byte field %d < -1 in %+v", b, r)
				}
			}
			if r.Line < 1 || r.Line > lg.Lines {
				t.Fatalf("line %d outside 1..%d", r.Line, lg.Lines)
			}
		}
	}
}
