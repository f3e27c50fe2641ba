package trainlog_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/memscan/memscan/internal/input"
	"github.com/memscan/memscan/load"
	"github.com/memscan/memscan/trainlog"
)

// rec abbreviates an expected record: -1 marks a measure the line does not carry.
type wantRec struct {
	line, rank, iter                 int
	alloc, maxAlloc, res, maxRes, du int64
	pct                              float64
	label                            string
}

func checkRecords(t *testing.T, got []trainlog.Record, want []wantRec) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%d records, want %d: %+v", len(got), len(want), got)
	}
	for i, w := range want {
		g := got[i]
		if g.Line != w.line || g.Rank != w.rank || g.Iteration != w.iter || g.AllocatedBytes != w.alloc ||
			g.MaxAllocatedBytes != w.maxAlloc || g.ReservedBytes != w.res || g.MaxReservedBytes != w.maxRes ||
			g.DeviceUsageBytes != w.du || g.CapacityPct != w.pct || (w.label != "" && g.Label != w.label) {
			t.Errorf("record %d = %+v\nwant %+v", i, g, w)
		}
	}
}

// Expected bytes are the printed MiB (Megatron) or GiB (DeepSpeed, torchtitan) values times 2^20 or 2^30,
// rounded: e.g. 542.3623046875 MiB × 1048576 = 568708096, 12.34 GiB × 1073741824 = 13249974108.16 → 13249974108.
func TestLogDialects(t *testing.T) {
	t.Run("megatron", func(t *testing.T) {
		in, err := load.DecodeFile(context.Background(), filepath.Join("testdata", "megatron.log"))
		if err != nil {
			t.Fatal(err)
		}
		lg := in.Log
		if in.Format != trainlog.FormatMegatron || lg.Dialect != "megatron" || lg.Lines != 8 {
			t.Fatalf("format %q dialect %q lines %d", in.Format, lg.Dialect, lg.Lines)
		}
		checkRecords(t, lg.Records, []wantRec{
			{4, 0, 1, 568708096, 653869568, 679477248, 679477248, -1, -1, "(after 1 iterations)"},
			{5, 1, 1, 524812288, 629407744, 734003200, 734003200, -1, -1, ""},
			{7, 0, 2, 1617284096, 2751021568, 2776629248, 2776629248, 3145728000, -1, ""},
			// Old versions print cached / max cached, some forks 2 decimals.
			{8, 1, 2, 1572864000, 2621440000, 2726297600, 2831155200, -1, -1, ""},
		})
		// weight and optimizer = 776.41 MiB → 814124892; activation 1024 MiB; total 1800.41 MiB → 1887866716.
		if len(lg.Theoretical) != 1 {
			t.Fatalf("theoretical = %+v", lg.Theoretical)
		}
		th := lg.Theoretical[0]
		if th.Line != 2 || th.WeightAndOptimizerByte != 814124892 || th.ActivationBytes != 1073741824 || th.TotalBytes != 1887866716 {
			t.Errorf("theoretical = %+v", th)
		}
	})
	t.Run("deepspeed", func(t *testing.T) {
		in, err := load.DecodeFile(context.Background(), filepath.Join("testdata", "deepspeed.log"))
		if err != nil {
			t.Fatal(err)
		}
		lg := in.Log
		if in.Format != trainlog.FormatDeepSpeed || lg.Dialect != "deepspeed" {
			t.Fatalf("format %q dialect %q", in.Format, lg.Dialect)
		}
		checkRecords(t, lg.Records, []wantRec{
			{2, -1, -1, 13249974108, 16825534382, 17179869184, 17179869184, -1, -1, "Before initializing optimizer states"},
			{6, -1, 3, 14495514624, 21743271936, 23622320128, 23622320128, -1, -1, "After step 3"},
			{7, 3, -1, 1342177280, 2684354560, 3221225472, 4294967296, -1, -1, "mp"},
		})
	})
	t.Run("torchtitan", func(t *testing.T) {
		in, err := load.DecodeFile(context.Background(), filepath.Join("testdata", "torchtitan.log"))
		if err != nil {
			t.Fatal(err)
		}
		lg := in.Log
		if in.Format != trainlog.FormatTorchtitan || lg.Dialect != "torchtitan" {
			t.Fatalf("format %q dialect %q", in.Format, lg.Dialect)
		}
		// torchtitan prints only the peak reserved memory (and its share of capacity), with ANSI colours.
		checkRecords(t, lg.Records, []wantRec{
			{2, 0, 1, -1, -1, -1, 13249974108, -1, 15.62, ""},
			{3, 1, 1, -1, -1, -1, 13958643712, -1, 16.43, ""},
			{4, 0, 10, -1, -1, -1, 22011707392, -1, 25.91, ""},
		})
		// 79.11 GiB × 2^30 = 84943715696.64 → 84943715697.
		if lg.CapacityBytes != 84943715697 || lg.DeviceName != "NVIDIA H100 80GB HBM3" {
			t.Errorf("capacity = %d %q", lg.CapacityBytes, lg.DeviceName)
		}
	})
}

func TestLogWithoutMemoryLines(t *testing.T) {
	_, err := load.DecodeFile(context.Background(), filepath.Join("testdata", "no_memory.log"))
	var de *input.Error
	if !errors.As(err, &de) || !errors.Is(err, input.ErrUnknownContent) || !strings.Contains(de.Msg, "no Megatron, DeepSpeed or torchtitan memory lines in 2 lines") {
		t.Errorf("err = %v", err)
	}
}

// TestLogLongLineSkipped checks that an over-long line costs a warning, not the file, and that line numbers
// and offsets after it stay right.
func TestLogLongLineSkipped(t *testing.T) {
	first := "[Rank 0] (after 1 iterations) memory (MB) | allocated: 1.0 | max allocated: 2.0 | reserved: 3.0 | max reserved: 4.0\n"
	long := strings.Repeat("x", 3<<20) + "\n"
	last := "[Rank 0] (after 2 iterations) memory (MB) | allocated: 5.0 | max allocated: 6.0 | reserved: 7.0 | max reserved: 8.0"
	lg, err := trainlog.Decode(context.Background(), "long.log", strings.NewReader(first+long+last))
	if err != nil {
		t.Fatal(err)
	}
	if lg.Lines != 3 || lg.SkippedLines != 1 || len(lg.Warnings) != 1 || !strings.Contains(lg.Warnings[0], "line 2 at byte "+strconv.Itoa(len(first))+" is longer") {
		t.Errorf("lines %d skipped %d warnings %v", lg.Lines, lg.SkippedLines, lg.Warnings)
	}
	if len(lg.Records) != 2 || lg.Records[1].Line != 3 || lg.Records[1].Offset != int64(len(first)+len(long)) || lg.Records[1].AllocatedBytes != 5<<20 {
		t.Errorf("records = %+v", lg.Records)
	}
}

func TestLogCancel(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := trainlog.Decode(ctx, "c.log", strings.NewReader("a\nb\n"))
	if !errors.Is(err, context.Canceled) {
		t.Errorf("err = %v, want context.Canceled", err)
	}
}

// TestLogLineEndings: a log written with CR alone (old Mac editors, progress-bar redraws) or CR LF reads exactly
// as with LF: every record, with the same line numbers and byte offsets. With LF-only splitting a CR log was
// one line, and only the first of its four ranks was read.
func TestLogLineEndings(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("testdata", "megatron.log"))
	if err != nil {
		t.Fatal(err)
	}
	want, err := trainlog.Decode(context.Background(), "lf.log", bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ name, eol string }{{"CR", "\r"}, {"CRLF", "\r\n"}} {
		t.Run(tc.name, func(t *testing.T) {
			text := strings.ReplaceAll(string(data), "\n", tc.eol)
			// A bufio.Scanner reads 4 KiB at first: put a CR LF across the boundary too.
			got, err := trainlog.Decode(context.Background(), "x.log", iotest.OneByteReader(strings.NewReader(text)))
			if err != nil {
				t.Fatal(err)
			}
			if got.Lines != want.Lines || len(got.Records) != len(want.Records) {
				t.Fatalf("%d lines, %d records; LF: %d lines, %d records", got.Lines, len(got.Records), want.Lines, len(want.Records))
			}
			extra := int64(len(tc.eol) - 1) // bytes each earlier line end adds
			for i, r := range got.Records {
				w := want.Records[i]
				w.Offset += extra * int64(w.Line-1)
				if !reflect.DeepEqual(r, w) {
					t.Errorf("record %d = %+v, want %+v", i, r, w)
				}
			}
		})
	}
}

// TestLogUnusableValues: memory figures that are not finite, non-negative numbers below 2^62 bytes are left
// out with a warning naming the line, the field and the text, in each dialect; they used to vanish silently
// (or, for DeepSpeed and torchtitan, take the whole line with them).
func TestLogUnusableValues(t *testing.T) {
	for _, tc := range []struct {
		name, text string
		records    int
		want       []string
	}{
		{"megatron nan and 1e308", "[Rank 0] (after 1 iterations) memory (MB) | allocated: nan | max allocated: 1e308 | reserved: 3.0 | max reserved: inf\n",
			1, []string{`line 1: allocated "nan" MB is not a usable memory figure`, `line 1: max allocated "1e308" MB`, `line 1: max reserved "inf" MB`}},
		{"deepspeed inf", "x\n[0] step 3: MA inf GB | Max_MA 2.5 GB | CA 3.0 GB | Max_CA -4 GB\n",
			1, []string{`line 2: MA "inf" GB is not a usable memory figure`, `line 2: Max_CA "-4" GB`}},
		{"torchtitan nan", "[rank0]:step:  1  loss:  7.1  memory: nan GiB(nan%)  tps: 1\n[rank1]:step:  1  loss:  7.1  memory: 2.0 GiB(3.0%)\n",
			1, []string{`line 1: memory "nan" GiB is not a usable memory figure`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			lg, err := trainlog.Decode(context.Background(), "bad.log", strings.NewReader(tc.text))
			if err != nil {
				t.Fatal(err)
			}
			if len(lg.Records) != tc.records || lg.BadValues != len(tc.want) {
				t.Errorf("%d records, %d bad values; want %d and %d", len(lg.Records), lg.BadValues, tc.records, len(tc.want))
			}
			all := strings.Join(lg.Warnings, "\n")
			for _, w := range tc.want {
				if !strings.Contains(all, w) {
					t.Errorf("warnings lack %q:\n%s", w, all)
				}
			}
		})
	}
}
