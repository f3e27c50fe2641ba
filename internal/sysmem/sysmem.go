// Package sysmem reports how much memory this process may use, for defaults that scale with the machine, backs
// pages of a large allocation ahead of its first writes (Populate), gives back the pages of its unused room
// (Release), maps a file's bytes into memory for a decoder to read in place (MapFile), and reports how much of
// such a mapping is resident (ResidentFile).
package sysmem

import (
	"bufio"
	"bytes"
	"os"
	"strconv"
	"strings"
)

// Total returns the memory available to this process in bytes: the machine's physical memory, or the control
// group's limit when that is lower (a container's memory.max). ok is false when neither can be read (a system
// without /proc), and callers fall back to a fixed default.
func Total() (n int64, ok bool) {
	return total(os.ReadFile)
}

// total is Total with the file reader injected, so the parsing is tested on fixed contents.
func total(read func(string) ([]byte, error)) (int64, bool) {
	phys, ok := memTotal(read)
	for _, p := range []string{
		"/sys/fs/cgroup/memory.max",                   // cgroup v2
		"/sys/fs/cgroup/memory/memory.limit_in_bytes", // cgroup v1
	} {
		b, err := read(p)
		if err != nil {
			continue
		}
		s := strings.TrimSpace(string(b))
		lim, err := strconv.ParseInt(s, 10, 64)
		// "max" (v2) or a page-rounded 2^63 (v1) mean no limit.
		if err != nil || lim <= 0 || lim >= 1<<62 {
			continue
		}
		if !ok || lim < phys {
			phys, ok = lim, true
		}
	}
	return phys, ok
}

// memTotal reads MemTotal from /proc/meminfo.
func memTotal(read func(string) ([]byte, error)) (int64, bool) {
	n, ok := kbField(read, "/proc/meminfo", "MemTotal:")
	return n, ok && n > 0
}

// ResidentFile returns how much of this process's resident memory files back (RssFile in /proc/self/status): the
// pages of its file mappings (MapFile) that are in memory. ok is false where that cannot be read.
func ResidentFile() (n int64, ok bool) {
	return kbField(os.ReadFile, "/proc/self/status", "RssFile:")
}

// kbField reads the field key of path, a /proc file of "key: value kB" lines, in bytes.
func kbField(read func(string) ([]byte, error), path, key string) (int64, bool) {
	b, err := read(path)
	if err != nil {
		return 0, false
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 2 || f[0] != key {
			continue
		}
		kb, err := strconv.ParseInt(f[1], 10, 64)
		if err != nil || kb < 0 || kb > 1<<50 {
			return 0, false
		}
		return kb << 10, true
	}
	return 0, false
}
