package trainlog_test

import (
	"context"
	"errors"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

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
