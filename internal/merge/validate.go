package merge

import (
	"fmt"
	"math"
)

// The bounds a rank summary is held to. Summaries are files anyone can write, and one made-up number must fail
// its own file, not print as a plausible total or end the whole merge.
const (
	// maxRankBytes bounds each byte count of one rank: 16 TiB, far above the device memory of any process (eight
	// of today's largest GPUs hold under 2.5 TiB), and low enough that half a million ranks at the bound still
	// sum within an int64.
	maxRankBytes = 1 << 44
	// maxRank bounds ranks, iterations and stages, as the largest number a snapshot path can name.
	maxRank = 1 << 30
	// MaxWorld bounds --world and --stages: every rank below maxRank.
	MaxWorld = maxRank + 1
	// maxSummaryOOMs bounds a rank's OOM count: a process records a few; a million ranks of this many still sum
	// within an int64.
	maxSummaryOOMs = 1 << 30
	// maxCategoryCount bounds one category's allocations in one rank (a trace holds millions at most).
	maxCategoryCount = 1 << 40
	// maxDevices bounds the devices one rank lists.
	maxDevices = 1 << 12
	// maxName bounds a file, run or category name, in bytes (PATH_MAX).
	maxName = 4096
)

// missing marks an integer field a summary did not hold at all: a summary without a rank is not rank 0.
const missing = math.MinInt

// FieldError is a rank summary (or a row of a cross-rank report) that memscan could not have written: the field
// and what is wrong with it.
type FieldError struct {
	Field string
	Msg   string
}

func (e *FieldError) Error() string { return e.Field + ": " + e.Msg }

func fieldErrorf(field, format string, args ...any) *FieldError {
	return &FieldError{Field: field, Msg: fmt.Sprintf(format, args...)}
}

// Check returns what is wrong with s, naming the field, or nil for a summary memscan could have written: a
// known kind and version, a file name, a rank, iteration and stage that are −1 (unknown) or a number a path can
// name, byte counts from 0 to 16 TiB that are consistent (requested ≤ allocated ≤ reserved; the free bytes
// inside what holds them), and bounded counts.
func (s *RankSummary) Check() error {
	if s.Kind != SummaryKind {
		return fieldErrorf("kind", "%q is not a rank summary (%q)", s.Kind, SummaryKind)
	}
	if s.Version < 1 || s.Version > SummaryVersion {
		return fieldErrorf("version", "%d is not a summary version this memscan reads (1 to %d)", s.Version, SummaryVersion)
	}
	if s.File == "" || len(s.File) > maxName {
		return fieldErrorf("file", "%d bytes: a summary names its snapshot's path (1 to %d bytes)", len(s.File), maxName)
	}
	if len(s.Run) > maxName {
		return fieldErrorf("run", "%d bytes is longer than a path (%d)", len(s.Run), maxName)
	}
	for _, f := range []struct {
		name string
		v    int
	}{{"rank", s.Rank}, {"iteration", s.Iteration}, {"stage", s.Stage}} {
		if f.v == missing {
			return fieldErrorf(f.name, "missing: a summary says its %s, or −1 for unknown", f.name)
		}
		if f.v < -1 || f.v > maxRank {
			return fieldErrorf(f.name, "%d: must be −1 (unknown) or 0 to %d", f.v, maxRank)
		}
	}
	for _, f := range []struct {
		name string
		v    int64
	}{{"reserved_bytes", s.ReservedBytes}, {"allocated_bytes", s.AllocatedBytes}, {"requested_bytes", s.RequestedBytes},
		{"internal_free_bytes", s.InternalFreeBytes}, {"external_free_bytes", s.ExternalFreeBytes},
		{"largest_free_block_bytes", s.LargestFreeBlockBytes}, {"peak_bytes", s.PeakBytes}} {
		if f.v < 0 || f.v > maxRankBytes {
			return fieldErrorf(f.name, "%d: a rank's byte count must be 0 to %d (16 TiB)", f.v, int64(maxRankBytes))
		}
	}
	for _, f := range []struct {
		name, of  string
		v, holder int64
	}{
		{"allocated_bytes", "reserved_bytes", s.AllocatedBytes, s.ReservedBytes},
		{"requested_bytes", "allocated_bytes", s.RequestedBytes, s.AllocatedBytes},
		{"internal_free_bytes", "allocated_bytes", s.InternalFreeBytes, s.AllocatedBytes},
		{"external_free_bytes", "reserved_bytes", s.ExternalFreeBytes, s.ReservedBytes},
		{"largest_free_block_bytes", "external_free_bytes", s.LargestFreeBlockBytes, s.ExternalFreeBytes},
	} {
		if f.v > f.holder {
			return fieldErrorf(f.name, "%d is more than %s %d, which holds it: the totals are inconsistent", f.v, f.of, f.holder)
		}
	}
	if s.OOMs < 0 || s.OOMs > maxSummaryOOMs {
		return fieldErrorf("ooms", "%d: a rank's count of out-of-memory events must be 0 to %d", s.OOMs, maxSummaryOOMs)
	}
	if len(s.Devices) > maxDevices {
		return fieldErrorf("devices", "%d devices: a rank lists at most %d", len(s.Devices), maxDevices)
	}
	for i, d := range s.Devices {
		if d < 0 || d >= maxDevices {
			return fieldErrorf(fmt.Sprintf("devices[%d]", i), "%d is not a device index (0 to %d)", d, maxDevices-1)
		}
	}
	if len(s.Categories) > summaryCategories {
		return fieldErrorf("categories", "%d entries: a summary keeps at most %d", len(s.Categories), summaryCategories)
	}
	for i, c := range s.Categories {
		if err := checkCategory(i, c.Name, c.Bytes, int64(c.Count), maxRankBytes, maxCategoryCount); err != nil {
			return err
		}
	}
	return nil
}

// checkCategory checks category i of a summary or a cross-rank report against the byte and count bounds.
func checkCategory(i int, name string, bytes, count, maxBytes, maxCount int64) error {
	field := fmt.Sprintf("categories[%d]", i)
	switch {
	case name == "" || len(name) > maxName:
		return fieldErrorf(field+".name", "%d bytes: a category has a name of 1 to %d bytes", len(name), maxName)
	case bytes < 0 || bytes > maxBytes:
		return fieldErrorf(field+".bytes", "%d: must be 0 to %d", bytes, maxBytes)
	case count < 0 || count > maxCount:
		return fieldErrorf(field+".count", "%d: must be 0 to %d", count, maxCount)
	}
	return nil
}
