package trainlog_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/memscan/memscan/trainlog"
)

// FuzzLineEndings: any text reads the same with its line ends written as LF, CR or CR LF: the same lines,
// records (at the same byte offsets when each LF becomes one CR), warnings and unusable figures; every record's
// figures are -1 or a non-negative byte count below 2^62.
func FuzzLineEndings(f *testing.F) {
	files, _ := filepath.Glob(filepath.Join("testdata", "*.log"))
	for _, p := range files {
		if data, err := os.ReadFile(p); err == nil {
			f.Add(data)
		}
	}
	f.Add([]byte("[Rank 0] (after 1 iterations) memory (MB) | allocated: nan | max allocated: 1e308 | reserved: 3 | max reserved: inf\n"))
	f.Add([]byte("x\n[0] step 3: MA inf GB | Max_MA 2.5 GB | CA 3.0 GB | Max_CA -4 GB\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		if bytes.IndexByte(data, '\r') >= 0 {
			return
		}
		lf, lfErr := trainlog.Decode(context.Background(), "f.log", bytes.NewReader(data))
		cr, crErr := trainlog.Decode(context.Background(), "f.log", bytes.NewReader(bytes.ReplaceAll(data, []byte("\n"), []byte("\r"))))
		if (lfErr == nil) != (crErr == nil) {
			t.Fatalf("LF: %v; CR: %v", lfErr, crErr)
		}
		if lfErr != nil {
			return
		}
		if lf.Lines != cr.Lines || lf.BadValues != cr.BadValues || !reflect.DeepEqual(lf.Records, cr.Records) || !reflect.DeepEqual(lf.Warnings, cr.Warnings) {
			t.Fatalf("LF and CR differ:\n%+v\n%+v", lf, cr)
		}
		for _, r := range lf.Records {
			for _, b := range []int64{r.AllocatedBytes, r.MaxAllocatedBytes, r.ReservedBytes, r.MaxReservedBytes, r.DeviceUsageBytes} {
				if b < -1 || b > 1<<62 {
					t.Fatalf("figure %d in %+v", b, r)
				}
			}
		}
		crlf, err := trainlog.Decode(context.Background(), "f.log", bytes.NewReader(bytes.ReplaceAll(data, []byte("\n"), []byte("\r\n"))))
		if err != nil || crlf.Lines != lf.Lines || len(crlf.Records) != len(lf.Records) || crlf.BadValues != lf.BadValues {
			t.Fatalf("CR LF: %v", err)
		}
	})
}
