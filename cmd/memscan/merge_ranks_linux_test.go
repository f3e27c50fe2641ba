//go:build linux

package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/vmihailenco/msgpack/v5"

	"github.com/memscan/memscan/internal/merge"
)

// memscanChild runs memscan (this test binary, see TestMain) under sh, which first runs prelude (a ulimit), with
// stdin; stdout and stderr are pipes, so a file-size limit does not stop them.
func memscanChild(t *testing.T, prelude string, stdin []byte, args ...string) (int, string, string) {
	t.Helper()
	cmd := exec.Command("sh", append([]string{"-c", prelude + `; exec "$0" "$@"`, os.Args[0]}, args...)...)
	cmd.Env = append(os.Environ(), childEnv+"=1")
	cmd.Stdin = bytes.NewReader(stdin)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	if _, ok := err.(*exec.ExitError); err != nil && !ok {
		t.Fatal(err)
	}
	return cmd.ProcessState.ExitCode(), stdout.String(), stderr.String()
}

// TestMergeFilesFromStdin: --files-from - reads the list from standard input.
func TestMergeFilesFromStdin(t *testing.T) {
	dir := t.TempDir()
	paths := writeRankFiles(t, dir, 300, 100)
	code, stdout, stderr := memscanChild(t, "true", []byte(strings.Join(paths, "\n")+"\n"),
		"merge", "--no-files", "--format", "json", "--files-from", "-")
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var c merge.CrossRank
	if err := json.Unmarshal([]byte(stdout), &c); err != nil {
		t.Fatal(err)
	}
	var sum int64
	for r := range 300 {
		sum += int64(r%97+1) << 30
	}
	if c.Ranks != 300 || c.Reserved.Sum != sum {
		t.Errorf("%d ranks, reserved %d; want 300 and %d", c.Ranks, c.Reserved.Sum, sum)
	}
}

// TestSummaryOnlyFullDisk: a summary that cannot be written whole (the file-size limit stands for a full disk)
// leaves no file, and a good summary written before stays as it was. The summary used to be truncated in place:
// a 0-byte file that a later merge fails on, in place of the good one.
func TestSummaryOnlyFullDisk(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "dump", "iteration_2", "rank0_memory_snapshot.pickle")
	copyFile(t, fixture(t, "testdata/example/rank0_memory_snapshot.pickle"), in)
	fresh, kept := filepath.Join(dir, "fresh"), filepath.Join(dir, "kept")
	for _, d := range []string{fresh, kept} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if code, _, stderr := memscanChild(t, "true", nil, "analyze", "--summary-only", "--quiet", "--out", kept, in); code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	good, err := filepath.Glob(filepath.Join(kept, "*"+summarySuffix))
	if err != nil || len(good) != 1 {
		t.Fatalf("summaries %v (%v)", good, err)
	}
	before, err := os.ReadFile(good[0])
	if err != nil {
		t.Fatal(err)
	}
	for _, out := range []string{fresh, kept} {
		code, _, stderr := memscanChild(t, "ulimit -f 0", nil, "analyze", "--summary-only", "--quiet", "--out", out, in)
		if code == exitOK || !strings.Contains(stderr, "file too large") {
			t.Errorf("--out %s: exit %d, stderr %q; want a failure naming the write", out, code, stderr)
		}
	}
	if left, _ := os.ReadDir(fresh); len(left) != 0 {
		t.Errorf("a failed write left %v", left)
	}
	left, _ := os.ReadDir(kept)
	after, err := os.ReadFile(good[0])
	if len(left) != 1 || err != nil || !bytes.Equal(before, after) {
		t.Errorf("the good summary was not kept: %d files, %d bytes before, %d after (%v)", len(left), len(before), len(after), err)
	}
}

// writeSparseReport writes a run's report.msgpack of n inputs, each carrying pad bytes of zeros in a field the
// merge does not read; the zeros are holes in a sparse file, so a report of hundreds of MB costs no disk.
func writeSparseReport(t *testing.T, path string, n, pad int) int64 {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	enc := func(v any) []byte {
		b, err := msgpack.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	head := append([]byte{0x83}, enc("version")...)
	head = append(append(head, enc(1)...), enc("tool")...)
	head = append(append(head, enc("memscan test")...), enc("inputs")...)
	head = append(head, 0xdd, byte(n>>24), byte(n>>16), byte(n>>8), byte(n))
	if _, err := f.Write(head); err != nil {
		t.Fatal(err)
	}
	for r := range n {
		in := []byte{0x87}
		for _, kv := range []struct {
			k string
			v any
		}{{"file", fmt.Sprintf("iteration_1/rank%d_memory_snapshot.pickle", r)}, {"format", "pickle-v4"}, {"rank", r},
			{"iteration", 1}, {"reserved_bytes", 2 << 30}, {"allocated_bytes", 1 << 30}} {
			in = append(append(in, enc(kv.k)...), enc(kv.v)...)
		}
		in = append(append(in, enc("pad")...), 0xdb, byte(pad>>24), byte(pad>>16), byte(pad>>8), byte(pad))
		if _, err := f.Write(in); err != nil {
			t.Fatal(err)
		}
		if _, err := f.Seek(int64(pad), io.SeekCurrent); err != nil {
			t.Fatal(err)
		}
	}
	end, err := f.Seek(0, io.SeekCurrent)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(end); err != nil { // the last input's zeros
		t.Fatal(err)
	}
	return end
}

// TestMergeLargeReport: a run's report.msgpack of 7,000 inputs and 280 MB is merged (anything over 256 MiB was
// refused as "not a memscan summary"), one input at a time: the merge's peak memory stays far below the file.
func TestMergeLargeReport(t *testing.T) {
	if testing.Short() {
		t.Skip("reads a 280 MB (sparse) report")
	}
	path := filepath.Join(t.TempDir(), "report.msgpack")
	size := writeSparseReport(t, path, 7000, 40000)
	if size <= 256<<20 {
		t.Fatalf("report of %d bytes; the case needs more than 256 MiB", size)
	}
	code, stderr, rss := runChild(t, "merge", "--no-files", "--jobs", "1", path)
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if rss > 150<<20 {
		t.Errorf("peak RSS %d MB merging a %d MB report: the inputs are not read one at a time", rss>>20, size>>20)
	}
	c, _ := mergeJSON(t, exitOK, path)
	if c.Ranks != 7000 || c.Reserved.Sum != 7000*(2<<30) || c.RankSet.Distinct != 7000 {
		t.Errorf("%d ranks, reserved %d", c.Ranks, c.Reserved.Sum)
	}
}
