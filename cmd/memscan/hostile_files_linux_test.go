//go:build linux

package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/memscan/memscan/internal/testutil"
)

// Limits a child process (TestMain) sets on itself from the environment: an address-space bound, so that a
// memscan that reads a device until memory runs out fails fast instead of taking the machine with it, and a
// file-size bound, which makes writes fail as on a full disk (EFBIG where ENOSPC would be).
const (
	childAddressSpaceEnv = "MEMSCAN_TEST_RLIMIT_AS"
	childFileSizeEnv     = "MEMSCAN_TEST_RLIMIT_FSIZE"
)

func applyChildLimits() {
	for env, res := range map[string]int{childAddressSpaceEnv: syscall.RLIMIT_AS, childFileSizeEnv: syscall.RLIMIT_FSIZE} {
		if n, err := strconv.ParseUint(os.Getenv(env), 10, 64); err == nil {
			syscall.Setrlimit(res, &syscall.Rlimit{Cur: n, Max: n})
		}
	}
}

// childRun is one memscan process: its exit status (-1 when killed), stderr, peak RSS and wall time.
type childRun struct {
	code    int
	stderr  string
	rss     int64
	elapsed time.Duration
}

// startChild starts memscan with args in a child process under a 4 GiB address-space bound plus env; wait
// ends it after timeout at the latest (a hang is a failure of its own, not a stuck test).
func startChild(t *testing.T, timeout time.Duration, env []string, args ...string) (*exec.Cmd, func() childRun) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	cmd := exec.CommandContext(ctx, os.Args[0], args...)
	cmd.Env = append(append(os.Environ(), childEnv+"=1", fmt.Sprintf("%s=%d", childAddressSpaceEnv, 4<<30)), env...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	start := time.Now()
	if err := cmd.Start(); err != nil {
		cancel()
		t.Fatal(err)
	}
	return cmd, func() childRun {
		defer cancel()
		err := cmd.Wait()
		var ee *exec.ExitError
		if err != nil && !errors.As(err, &ee) {
			t.Fatal(err)
		}
		r := childRun{code: cmd.ProcessState.ExitCode(), stderr: stderr.String(), elapsed: time.Since(start)}
		if ctx.Err() != nil {
			r.stderr += fmt.Sprintf("\n[killed: still running after %v]", timeout)
		}
		if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
			r.rss = ru.Maxrss << 10
		}
		return r
	}
}

func runChildWith(t *testing.T, timeout time.Duration, env []string, args ...string) childRun {
	t.Helper()
	_, wait := startChild(t, timeout, env, args...)
	return wait()
}

// TestNonRegularFiles: every file any flag or command reads is refused at once, with exit 1 (a flag) or 2 (an
// input) and one line naming it and what it is, when it is a named pipe (which blocked memscan forever, SIGINT
// included), a device (which /dev/zero read until 4-5 GB of memory ran out) or a socket.
func TestNonRegularFiles(t *testing.T) {
	if testing.Short() {
		t.Skip("starts about thirty child processes")
	}
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo.json")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Skip("no FIFOs here:", err)
	}
	sock := filepath.Join(dir, "sock.json")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Skip("no Unix sockets here:", err)
	}
	defer l.Close()
	good := fixture(t, "testdata/example/rank0_memory_snapshot.pickle")
	// A run directory whose report.msgpack is a link to /dev/zero, as one side of compare.
	runDir := filepath.Join(dir, "run")
	if err := os.MkdirAll(runDir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/dev/zero", filepath.Join(runDir, "report.msgpack")); err != nil {
		t.Fatal(err)
	}
	out := t.TempDir()
	for _, special := range []struct{ path, what string }{
		{fifo, "a named pipe (FIFO), not a regular file"},
		{"/dev/zero", "a character device, not a regular file"},
		{"/dev/urandom", "a character device, not a regular file"},
		{sock, "a socket, not a regular file"},
	} {
		p := special.path
		for _, tc := range []struct {
			name, prefix string
			args         []string
			code         int
		}{
			{"analyze --rules", "analyze: --rules: ", []string{"analyze", "--out", out, "--rules", p, good}, exitUsage},
			{"analyze --static", "analyze: --static: ", []string{"analyze", "--out", out, "--static", p, good}, exitUsage},
			{"static --config", "static: --config: ", []string{"static", "--no-files", "--config", p}, exitUsage},
			{"static --gpus-file", "static: --gpus-file: ", []string{"static", "--no-files", "--model", "llama3-8b", "--gpus-file", p}, exitUsage},
			{"static --calibration", "static: --calibration: corrections: ", []string{"static", "--no-files", "--model", "llama3-8b", "--calibration", p}, exitUsage},
			{"calibrate --manifest", "calibrate: manifest: ", []string{"calibrate", "--out", out, "--manifest", p}, exitUsage},
			{"analyze input", "", []string{"analyze", "--out", out, "--quiet", p}, exitFailed},
			{"export input", "export: ", []string{"export", "--format", "json", "-o", filepath.Join(out, "x.json"), p}, exitFailed},
			{"compare input", "compare: ", []string{"compare", "--out", out, p, good}, exitFailed},
		} {
			t.Run(tc.name+" "+filepath.Base(p), func(t *testing.T) {
				r := runChildWith(t, 30*time.Second, nil, tc.args...)
				want := "memscan: " + tc.prefix + p + ": " + special.what
				if r.code != tc.code || !strings.Contains(r.stderr, want) {
					t.Errorf("exit %d, want %d; stderr lacks %q:\n%s", r.code, tc.code, want, r.stderr)
				}
				if r.elapsed > 10*time.Second || r.rss > 200<<20 {
					t.Errorf("took %v and %d MiB", r.elapsed, r.rss>>20)
				}
			})
		}
	}
	t.Run("compare run directory with report.msgpack linked to /dev/zero", func(t *testing.T) {
		r := runChildWith(t, 30*time.Second, nil, "compare", "--out", out, runDir, good)
		want := filepath.Join(runDir, "report.msgpack") + ": a character device, not a regular file"
		if r.code != exitFailed || !strings.Contains(r.stderr, want) || r.rss > 200<<20 {
			t.Errorf("exit %d, %d MiB; stderr lacks %q:\n%s", r.code, r.rss>>20, want, r.stderr)
		}
	})
}

// TestSparseConfig: a 3 GB config file (sparse: it costs no disk) is refused from its size before any of it is
// read; it used to be read whole (3 GB of memory) before "at most 1048576".
func TestSparseConfig(t *testing.T) {
	p := filepath.Join(t.TempDir(), "huge.json")
	f, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(3 << 30); err != nil {
		t.Skip("no sparse files here:", err)
	}
	f.Close()
	r := runChildWith(t, 30*time.Second, nil, "static", "--no-files", "--config", p)
	want := "memscan: static: --config: " + p + ": 3.0 GiB (3221225472 bytes) is larger than the 1.0 MiB (1048576 bytes) limit for a static config"
	if r.code != exitUsage || !strings.Contains(r.stderr, want) || r.rss > 100<<20 {
		t.Errorf("exit %d, peak RSS %d MiB; stderr lacks %q:\n%s", r.code, r.rss>>20, want, r.stderr)
	}
}

// TestWriteFailure: a write that fails part-way (a full disk, simulated by a file-size limit) ends memscan with
// exit status 4, naming the file, and leaves the earlier runs and `latest` as they were and no temporary file or
// staging directory behind. static used to write in place, truncating its report over the previous one, and
// exit 2; analyze left no run directory but exited 2 like a bad input.
func TestWriteFailure(t *testing.T) {
	full := []string{childFileSizeEnv + "=16384"} // static_report.json is about 32 KB
	for _, tc := range []struct {
		name string
		args []string
	}{
		{"static", []string{"static", "--config", fixture(t, "testdata/static/llama3-8b-fsdp8.json"), "--no-plots"}},
		{"analyze", []string{"analyze", "--quiet", "--no-plots", fixture(t, "testdata/example/rank0_memory_snapshot.pickle")}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := t.TempDir()
			args := append(slices.Clone(tc.args), "--out", out)
			if r := runChildWith(t, time.Minute, nil, args...); r.code != exitOK {
				t.Fatalf("the first run: exit %d:\n%s", r.code, r.stderr)
			}
			before := treeDigest(t, out)
			r := runChildWith(t, time.Minute, full, args...)
			if r.code != exitWriteFailed || !strings.Contains(r.stderr, "memscan: "+tc.name+": ") || !strings.Contains(r.stderr, ": file too large") {
				t.Errorf("exit %d, want %d and the file named:\n%s", r.code, exitWriteFailed, r.stderr)
			}
			if after := treeDigest(t, out); after != before {
				t.Errorf("the results root changed:\nbefore %s\nafter  %s", before, after)
			}
			checkNoLeftovers(t, out)
		})
	}
}

// treeDigest lists every path under dir with its size and, for links, its target: what a failed run must not
// change.
func treeDigest(t *testing.T, dir string) string {
	t.Helper()
	var b strings.Builder
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		info, err := os.Lstat(p)
		if err != nil {
			return err
		}
		var size int64
		if info.Mode().IsRegular() {
			size = info.Size()
		}
		target, _ := os.Readlink(p)
		fmt.Fprintf(&b, "%s %d %s; ", strings.TrimPrefix(p, dir), size, target)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// checkNoLeftovers fails when dir holds a temporary file or a staging directory.
func checkNoLeftovers(t *testing.T, dir string) {
	t.Helper()
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if strings.HasSuffix(e.Name(), ".tmp") || strings.HasPrefix(e.Name(), ".partial-") {
			t.Errorf("%s left in %s", e.Name(), dir)
		}
	}
}

// TestInterrupt: SIGINT and SIGTERM (what Slurm, Kubernetes and timeout send) stop a long analysis within
// moments, with exit status 130 or 143 and one line saying so, leaving no staging directory. SIGTERM used to
// kill memscan outright and SIGINT to end it with exit status 2.
func TestInterrupt(t *testing.T) {
	if testing.Short() || testutil.Race {
		t.Skip("reads gigabytes of a gzip bomb")
	}
	bomb := filepath.Join(t.TempDir(), "memory_snapshot.json.gz")
	writeGzipBomb(t, bomb, []byte(`{"segments": [`), ' ', 16<<10) // 16 GiB of white space: minutes to read
	for _, tc := range []struct {
		sig  syscall.Signal
		code int
		name string
	}{{syscall.SIGINT, 130, "SIGINT"}, {syscall.SIGTERM, 143, "SIGTERM"}} {
		t.Run(tc.name, func(t *testing.T) {
			out := t.TempDir()
			cmd, wait := startChild(t, 2*time.Minute, nil, "analyze", "--out", out, "--quiet", "--max-input-size", "32GiB", bomb)
			time.Sleep(time.Second)
			sent := time.Now()
			if err := cmd.Process.Signal(tc.sig); err != nil {
				t.Fatal(err)
			}
			r := wait()
			if r.code != tc.code || !strings.Contains(r.stderr, "memscan: interrupted by "+tc.name) {
				t.Errorf("exit %d, want %d:\n%s", r.code, tc.code, r.stderr)
			}
			if d := time.Since(sent); d > 5*time.Second {
				t.Errorf("took %v to stop", d)
			}
			checkNoLeftovers(t, out)
		})
	}
}

// TestSecondSignal: a second signal ends the process at once, even if the command has not stopped.
func TestSecondSignal(t *testing.T) {
	exited := make(chan int, 1)
	ctx, stop := notifySignals(context.Background(), &bytes.Buffer{}, func(code int) { exited <- code })
	defer stop()
	if err := syscall.Kill(os.Getpid(), syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-ctx.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("the first SIGTERM did not cancel the context")
	}
	var cause *interrupted
	if !errors.As(context.Cause(ctx), &cause) || cause.exitCode() != 143 {
		t.Errorf("cause %v", context.Cause(ctx))
	}
	if err := syscall.Kill(os.Getpid(), syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	select {
	case code := <-exited:
		if code != 143 {
			t.Errorf("exit %d, want the first signal's 143", code)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the second signal did not end the process")
	}
}
