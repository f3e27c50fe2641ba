//go:build linux

package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/memscan/memscan/internal/export"
	"github.com/memscan/memscan/internal/testutil"
	"github.com/memscan/memscan/internal/units"
	"github.com/memscan/memscan/snapshot"
)

// childEnv makes the test binary run memscan itself (see TestMain), so that a test can measure the peak
// resident memory of one memscan process.
const childEnv = "MEMSCAN_TEST_RUN_MAIN"

func TestMain(m *testing.M) {
	if os.Getenv(childEnv) == "1" {
		applyChildLimits()
		// As main does: signals cancel the command, a second one ends the process.
		ctx, stop := notifySignals(context.Background(), os.Stderr, os.Exit)
		code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
		stop()
		os.Exit(code)
	}
	os.Exit(m.Run())
}

// runChild runs memscan with args in a child process and returns its exit code, stderr and peak RSS in bytes.
func runChild(t *testing.T, args ...string) (int, string, int64) {
	t.Helper()
	// A deadline, so that a bound that no longer stops the input fails the test instead of hanging it.
	ctx, cancel := context.WithTimeout(context.Background(), testutil.BoundTimeout())
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], args...)
	cmd.Env = append(os.Environ(), childEnv+"=1")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	err := cmd.Run()
	if _, ok := err.(*exec.ExitError); err != nil && !ok {
		t.Fatal(err)
	}
	ru := cmd.ProcessState.SysUsage().(*syscall.Rusage)
	return cmd.ProcessState.ExitCode(), stderr.String(), ru.Maxrss << 10 // kilobytes on Linux
}

// writeGzipBomb writes a gzip file whose content is head followed by n MiB of fill: 4 GiB of content is a 4 MB
// file made in a moment.
func writeGzipBomb(t *testing.T, path string, head []byte, fill byte, n int) {
	t.Helper()
	testutil.GzipBomb(t, path, head, bytes.Repeat([]byte{fill}, 1<<20), n)
}

// TestAnalyzeHostileInputs runs memscan analyze on hostile inputs in a child process each, checking the exit
// status, the one-line message naming the file, and the process's peak resident memory. The gzip bombs carry
// 4 GiB of content (the report's bomb took 8.4 GB of RSS and died with a runtime out-of-memory dump).
func TestAnalyzeHostileInputs(t *testing.T) {
	if testing.Short() {
		t.Skip("runs child processes over 4 GiB gzip bombs")
	}
	dir := t.TempDir()
	const fourGiB = 4 << 10 // in MiB
	pickleBomb := filepath.Join(dir, "bomb.pickle.gz")
	writeGzipBomb(t, pickleBomb, []byte("\x80\x04\x95\x00\x00\x00\x00\x01\x00\x00\x00"), 0, fourGiB)
	declinedBomb := filepath.Join(dir, "declined.pickle.gz")
	writeGzipBomb(t, declinedBomb, []byte("\x80\x04}2"), 'N', fourGiB)
	jsonBomb := filepath.Join(dir, "memory_snapshot.json.gz")
	writeGzipBomb(t, jsonBomb, []byte(`{"segments": [`), ' ', fourGiB)
	nones := filepath.Join(dir, "nones.pickle")
	if err := os.WriteFile(nones, append(append([]byte{0x80, 4}, bytes.Repeat([]byte("N"), 5_000_000)...), '.'), 0o644); err != nil {
		t.Fatal(err)
	}
	// 1100 segments of 2^53 bytes (the largest size the decoder accepts): their reserved total passes 2^63−1
	// at the 1024th; the report printed such a total as "reserved -384.0 PiB".
	huge := filepath.Join(dir, "huge.pickle")
	{
		s := &snapshot.Snapshot{DeviceTraces: [][]snapshot.TraceEntry{{}}}
		for i := range 1100 {
			addr := uint64(i+1) << 54
			s.Segments = append(s.Segments, snapshot.Segment{Address: addr, TotalSize: 1 << 53, Type: snapshot.SegmentLarge,
				Blocks: []snapshot.Block{{Address: addr, Size: 1 << 53, State: snapshot.BlockInactive}}})
		}
		var buf bytes.Buffer
		if err := export.WritePickle(context.Background(), &buf, s); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(huge, buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	good := fixture(t, "testdata/example/rank0_memory_snapshot.pickle")
	tests := []struct {
		name   string
		args   []string
		code   int
		want   string
		maxRSS int64
	}{
		{"pickle header and 4 GiB of zeros", []string{pickleBomb}, exitFailed,
			pickleBomb + ": byte 11: unknown pickle opcode 0x00", 100 << 20},
		{"4 GiB pickle the fast decoder declines", []string{"--max-input-size", "64MiB", declinedBomb}, exitFailed,
			declinedBomb + ": needs the reference pickle decoder (the fast one does not handle opcode 0x32 (opcode '2') at byte 3), which reads at most a quarter of the input size limit, 16.0 MiB", 200 << 20},
		{"4 GiB of JSON", []string{"--max-input-size", "64MiB", jsonBomb}, exitFailed,
			jsonBomb + ": decompresses to more than the input size limit of 64.0 MiB (67108864 bytes) (--max-input-size)", 320 << 20}, // the JSON reader may buffer 64 MiB of one value
		{"5 million NONE opcodes", []string{nones}, exitFailed,
			nones + ": byte 2: the top-level value is None; a snapshot is a dict (or a list of segments)", 100 << 20},
		{"sizes past 2^63", []string{huge}, exitFailed,
			"analyze " + huge + ": segments[1023].total_size: 9007199254740992: the input's sizes add up past 9223372036854775807 bytes", 100 << 20},
		{"a bomb among good inputs", []string{good, pickleBomb}, exitPartial,
			pickleBomb + ": byte 11: unknown pickle opcode 0x00", 200 << 20},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			args := append([]string{"analyze", "--no-plots", "--quiet", "--out", t.TempDir()}, tc.args...)
			code, stderr, rss := runChild(t, args...)
			if code != tc.code {
				t.Errorf("exit %d, want %d; stderr:\n%s", code, tc.code, stderr)
			}
			if !strings.Contains(stderr, "memscan: "+tc.want) {
				t.Errorf("stderr lacks %q:\n%s", tc.want, stderr)
			}
			if lines := strings.Count(stderr, "\n"); lines > 2 {
				t.Errorf("stderr has %d lines, want the failure and the summary:\n%s", lines, stderr)
			}
			if rss > tc.maxRSS && !testutil.Race {
				t.Errorf("peak RSS %d MiB, want at most %d MiB", rss>>20, tc.maxRSS>>20)
			}
			t.Logf("peak RSS %.1f MiB", float64(rss)/(1<<20))
		})
	}
}

// TestAnalyzeMaxInputSizeFlag checks the flag's parsing: units are read, nonsense is a usage error.
func TestAnalyzeMaxInputSizeFlag(t *testing.T) {
	good := fixture(t, "testdata/example/rank0_memory_snapshot.pickle")
	fi, err := os.Stat(good)
	if err != nil {
		t.Fatal(err)
	}
	checkCLIErrors(t, []cliErrorCase{
		{"not a size", []string{"analyze", "--max-input-size", "lots", good}, exitUsage, `invalid argument "lots" for "--max-input-size"`},
		{"zero", []string{"analyze", "--max-input-size", "0", good}, exitUsage, `invalid argument "0" for "--max-input-size"`},
		{"smaller than the input", []string{"analyze", "--out", t.TempDir(), "--max-input-size", "1KiB", good}, exitFailed,
			fmt.Sprintf("%s: %s (%d bytes) is larger than the input size limit of 1.0 KiB (1024 bytes)", good, units.Bytes(fi.Size()), fi.Size())},
	})
}

// TestAnalyzeOutChecked checks that an --out that cannot hold results is refused before any input is read, with
// exit status 1 and the path and reason (the report found a read-only --out only after the whole analysis, exit
// 2). Files cannot be created anywhere in /proc, whoever runs the test. A run that succeeds leaves exactly its
// run directory and latest in --out, no staging directory.
func TestAnalyzeOutChecked(t *testing.T) {
	good := fixture(t, "testdata/example/rank0_memory_snapshot.pickle")
	bomb := filepath.Join(t.TempDir(), "bomb.pickle.gz")
	writeGzipBomb(t, bomb, []byte("\x80\x04}2"), 'N', 16) // would take the reference decoder's path if read
	checkCLIErrors(t, []cliErrorCase{
		{"out not writable", []string{"analyze", "--out", "/proc/self", good, bomb}, exitUsage,
			"analyze: --out /proc/self: is not writable: "},
		{"out below a directory that is not writable", []string{"analyze", "--out", "/proc/self/results", good}, exitUsage,
			"analyze: --out /proc/self/results: cannot be created: /proc/self is not writable: "},
		// Every command that writes under --out checks it before reading an input (none of these exists).
		{"compare", []string{"compare", "--out", "/proc/self", "missing-a.pickle", "missing-b.pickle"}, exitUsage,
			"compare: --out /proc/self: is not writable: "},
		{"calibrate", []string{"calibrate", "--out", "/proc/self", "--config", "missing.yaml", "missing.pickle"}, exitUsage,
			"calibrate: --out /proc/self: is not writable: "},
		{"merge", []string{"merge", "--out", "/proc/self", "missing-dir"}, exitUsage,
			"merge: --out /proc/self: is not writable: "},
		{"static", []string{"static", "--out", "/proc/self", "--config", "missing.yaml"}, exitUsage,
			"static: --out /proc/self: is not writable: "},
	})
	out := filepath.Join(t.TempDir(), "results")
	if code, _, stderr := runCLI(t, "analyze", "--quiet", "--no-plots", "--out", out, good); code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	checkOnlyRun(t, out)
	for _, f := range []string{"analysis_report.txt", "README.md", "summary.json", "report.msgpack"} {
		if _, err := os.Stat(filepath.Join(out, "latest", f)); err != nil {
			t.Errorf("latest run lacks %s: %v", f, err)
		}
	}
}
