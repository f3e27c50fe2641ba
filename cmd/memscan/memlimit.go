package main

import (
	"bytes"
	"io"
	"os"
	"runtime/debug"
	"slices"
)

// memoryLimitFactor is the soft memory limit per byte of input being analyzed at once. The Go collector
// otherwise lets the heap grow to twice what is live; the decoded model of a snapshot pickle is smaller than
// the file, so most of that growth is garbage from decoding that a limit has collected sooner. The live peak,
// decoded model and analysis together, is 1.4-1.7× the file (memscan-gen --size 200MB: 1.70× on one device,
// 1.43× on four; 1.57× for 300MB with C++ stacks on two); peak RSS then stays at 1.7-1.9× the file. Measured
// before the analysis grew, on the four-device file with charts: 2.0× at a factor of 1.9 and 1.7-1.8× at 1.7,
// at the same CPU time.
const memoryLimitFactor = 1.7

// minMemoryLimit keeps small inputs clear of the limit: below it the runtime's own overhead dominates.
const minMemoryLimit = 128 << 20

// memoryLimitFor returns the soft memory limit for analyzing files with jobs at once: memoryLimitFactor times
// the total size of the jobs largest inputs. ok is false when no limit should be set: the user set GOMEMLIMIT,
// or an input is gzip-compressed, whose decoded size the file size does not bound.
func memoryLimitFor(files []string, jobs int, env func(string) string) (limit int64, ok bool) {
	if env("GOMEMLIMIT") != "" || len(files) == 0 {
		return 0, false
	}
	sizes := make([]int64, 0, len(files))
	for _, f := range files {
		fi, err := os.Stat(f)
		if err != nil || !fi.Mode().IsRegular() {
			continue // the decoder reports it
		}
		gz, err := isGzip(f)
		if err != nil {
			continue
		}
		if gz {
			return 0, false
		}
		sizes = append(sizes, fi.Size())
	}
	slices.Sort(sizes)
	slices.Reverse(sizes)
	var sum int64
	for _, s := range sizes[:min(len(sizes), max(jobs, 1))] {
		sum += s
	}
	return max(int64(float64(sum)*memoryLimitFactor), minMemoryLimit), true
}

func isGzip(path string) (bool, error) {
	f, err := os.Open(path)
	if err != nil {
		return false, err
	}
	defer f.Close()
	var magic [2]byte
	if _, err := io.ReadFull(f, magic[:]); err != nil {
		return false, nil // shorter than a gzip header
	}
	return bytes.Equal(magic[:], []byte{0x1f, 0x8b}), nil
}

// applyMemoryLimit sets the process's soft memory limit for analyzing files (see memoryLimitFor).
func applyMemoryLimit(files []string, jobs int) {
	if limit, ok := memoryLimitFor(files, jobs, os.Getenv); ok {
		debug.SetMemoryLimit(limit)
	}
}
