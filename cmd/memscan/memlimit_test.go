package main

import (
	"os"
	"path/filepath"
	"testing"
)

func TestMemoryLimitFor(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, data []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	const mb = 1 << 20
	sized := func(name string, size int64) string { // sparse: only the size matters
		p := write(name, []byte{0x80, 0x04})
		if err := os.Truncate(p, size); err != nil {
			t.Fatal(err)
		}
		return p
	}
	big := sized("big.pickle", 200*mb)
	mid := sized("mid.pickle", 100*mb)
	small := write("small.pickle", []byte{0x80, 0x04})
	// gzip files: one whose trailer claims 150 MiB of content, and one too short to have a trailer.
	gz := write("snap.pickle.gz", append([]byte{0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 3, 3, 0, 0, 0, 0, 0}, 0, 0, 0, 0x60, 0x09))
	cut := write("cut.pickle.gz", []byte{0x1f, 0x8b, 8, 0})
	noEnv := func(string) string { return "" }
	tests := []struct {
		name   string
		files  []string
		jobs   int
		env    func(string) string
		want   int64
		wantOK bool
	}{
		// 2 × the bytes analyzed at once less the 32 MiB reserve, by hand: 2 × 200 − 32 MiB; 2 × 300 − 32 MiB.
		{"one file", []string{big}, 1, noEnv, 368 * mb, true},
		{"two jobs take the two largest", []string{small, mid, big}, 2, noEnv, 568 * mb, true},
		{"one job takes the largest", []string{small, mid, big}, 1, noEnv, 368 * mb, true},
		{"small inputs get the floor", []string{small}, 4, noEnv, minMemoryLimit, true},
		{"missing files are skipped", []string{filepath.Join(dir, "none"), big}, 1, noEnv, 368 * mb, true},
		{"the floor below the reserve", []string{sized("tiny.pickle", 70*mb)}, 1, noEnv, minMemoryLimit, true},
		// The trailer's 0x09600000 bytes = 150 MiB: 2 × 150 − 32 MiB with one job, 2 × 350 − 32 MiB with two.
		{"gzip counts as its trailer claims", []string{gz}, 1, noEnv, 268 * mb, true},
		{"gzip beside a pickle", []string{gz, big}, 2, noEnv, 668 * mb, true},
		{"gzip without a trailer: no limit", []string{big, cut}, 1, noEnv, 0, false},
		{"GOMEMLIMIT wins", []string{big}, 1, func(k string) string {
			if k == "GOMEMLIMIT" {
				return "1GiB"
			}
			return ""
		}, 0, false},
		{"no files", nil, 1, noEnv, 0, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := memoryLimitFor(tc.files, tc.jobs, tc.env)
			if ok != tc.wantOK || got != tc.want {
				t.Errorf("memoryLimitFor = %d, %v; want %d, %v", got, ok, tc.want, tc.wantOK)
			}
		})
	}
}

// TestNextMemoryLimit: the limit is the base while the live heap leaves a sixteenth of it free, and an eighth above
// the live heap once it does not, down to the base again when the live heap shrinks (hand-computed).
func TestNextMemoryLimit(t *testing.T) {
	const mb = 1 << 20
	for _, c := range []struct{ limit, live, want int64 }{
		{160 * mb, 40 * mb, 160 * mb}, // after a raise, once the analysis has let its trace go
		{160 * mb, 100 * mb, 160 * mb},
		{160 * mb, 150 * mb, 160 * mb}, // exactly fifteen sixteenths
		{160 * mb, 152 * mb, 171 * mb},
		{160 * mb, 320 * mb, 360 * mb},
	} {
		if got := nextMemoryLimit(c.limit, c.live); got != c.want {
			t.Errorf("nextMemoryLimit(%d, %d) = %d, want %d", c.limit, c.live, got, c.want)
		}
	}
}

// TestLiveHeap: the governor's live heap is the smaller of what the last two collections found, so one collection
// that marked a burst of allocation as live does not raise the limit; readings of the same collection count once.
func TestLiveHeap(t *testing.T) {
	const mb = 1 << 20
	base := int64(209 * mb) // a 121 MB file: twice it less the reserve
	var h liveHeap
	steps := []struct {
		cycles     uint64
		live, want int64 // want: the limit after the reading
	}{
		{2, 124 * mb, base},
		{2, 124 * mb, base},              // polled again before the next collection
		{3, 152 * mb, base},              // the decode's trace
		{4, 297 * mb, base},              // a long mark over the replays' allocations: not trusted alone
		{5, 197 * mb, 197*mb + 197*mb/8}, // two collections over fifteen sixteenths: raised
		{6, 200 * mb, 197*mb + 197*mb/8},
		{7, 77 * mb, base}, // the trace let go
	}
	for i, s := range steps {
		h.observe(s.cycles, s.live)
		if got := nextMemoryLimit(base, h.settled()); got != s.want {
			t.Errorf("reading %d (collection %d, %d MB live): limit %d MB, want %d MB", i, s.cycles, s.live/mb, got/mb, s.want/mb)
		}
	}
}
