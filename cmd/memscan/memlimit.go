package main

import (
	"os"
	"runtime/debug"
	"runtime/metrics"
	"slices"
	"sync"
	"time"

	"github.com/memscan/memscan/load"
)

// memoryLimitFactor is the soft memory limit per byte of input being analyzed at once, less rssReserve: peak RSS
// stays within twice the input whenever what the analysis keeps live fits in it. The decoded model of a snapshot
// holds its trace at 40 bytes per event against 45-80 bytes of pickle, and the analysis adds about 30 bytes per
// event while it holds the trace (a file analyzed by AnalyzeFile lets it go before the timeline detail is built),
// so a file of small events (a training loop with memo-shared stacks: 47 bytes per event) comes close; where it
// keeps more live, the governor raises the limit (see nextMemoryLimit) instead of letting the collector run back
// to back.
const memoryLimitFactor = 2.0

// gcPercent lets the heap grow to five times what is live before a collection while it is below the limit (the
// runtime's default is twice). The limit, not the percentage, then decides when the collector runs once the
// decoded snapshot is in memory, and every cycle marks the whole trace: a generated 113 MB snapshot took 29
// cycles at a limit of 1.7× the file, 14 at 2× with the default percentage, 5 with this one.
const gcPercent = 400

// rssReserve is what a process's resident set holds beyond the memory the Go runtime maps: the binary's code and
// data, 14–16 MiB of file-backed pages, and the limit's own overshoot between collections. With 24 MiB the
// training loop's peak RSS ranged over 1.86–2.04× its 121 MB file; with this, 1.83–1.87×, in the same time.
const rssReserve = 32 << 20

// minMemoryLimit keeps small inputs clear of the limit: below it the runtime's own overhead dominates.
const minMemoryLimit = 128 << 20

// memoryLimitFor returns the soft memory limit for analyzing files with jobs at once: memoryLimitFactor times
// the total size of the jobs largest inputs, less rssReserve. A gzip file counts at the length its trailer claims
// for its content (load.ContentSize): a false claim only makes the collector work harder or less, since the
// governor raises the limit past the live heap. ok is false when no limit should be set: the user set GOMEMLIMIT,
// or a gzip file's trailer cannot be read.
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
		size, ok := load.ContentSize(f)
		if !ok {
			return 0, false
		}
		sizes = append(sizes, size)
	}
	slices.Sort(sizes)
	slices.Reverse(sizes)
	var sum int64
	for _, s := range sizes[:min(len(sizes), max(jobs, 1))] {
		sum += s
	}
	return max(int64(float64(sum)*memoryLimitFactor)-rssReserve, minMemoryLimit), true
}

// nextMemoryLimit is the limit the governor sets when the collector last found live bytes of heap: base, the limit
// the input's size gave, while live is at most fifteen sixteenths of it, else an eighth above live. Past that point
// each cycle frees less than a sixteenth of the limit, so cycles would follow each other (the runtime then gives
// the collector up to half the CPU); raising the limit trades resident memory for time only while the live set
// itself has outgrown the bound, and the limit comes back to base once it has shrunk again: the reports are
// written after the analysis lets its trace go, and they would otherwise fill the raised limit with garbage.
// A cycle is cheap since the trace holds no pointer (a training loop's analysis takes 10 cycles under these
// bounds against 8 under seven eighths and a quarter, in the same CPU time), so the bounds are tight: with seven
// eighths and a quarter, that loop's detectors (live 1.58× its file for a moment) raised the limit and its peak
// RSS reached 2.0–2.1× the file; with these, 1.9×.
func nextMemoryLimit(base, live int64) int64 {
	if live <= base/16*15 {
		return base
	}
	return live + live/8
}

// liveHeap is the live heap the last two collections found. A collection counts as live everything allocated
// while it marks, so one that overlaps a burst of allocation (a long mark while the allocator replays fill their
// arrays, its workers holding a quarter of two busy cores) reports far more than is live: 297 MB on a training
// loop whose live heap was 185–197 MB. The governor raised the limit on that reading and the heap filled it, a peak
// RSS of 2.02× the file. What two collections in a row found is what is live.
type liveHeap struct {
	seen       bool
	cycles     uint64 // the collections counted at the last reading
	last, prev int64  // what the last collection and the one before found; prev −1 until there are two
}

// observe takes a reading: the collections counted so far and the live heap the last one found.
func (h *liveHeap) observe(cycles uint64, live int64) {
	switch {
	case !h.seen:
		h.seen, h.prev = true, -1
	case cycles == h.cycles:
		h.last = live // the same collection's figure
		return
	default:
		h.prev = h.last
	}
	h.cycles, h.last = cycles, live
}

// settled is the smaller of what the last two collections found (the last one's until there are two).
func (h *liveHeap) settled() int64 {
	if h.prev < 0 {
		return h.last
	}
	return min(h.last, h.prev)
}

// memoryGovernor sets the soft memory limit and GC percentage of one analysis and keeps the limit ahead of the live
// heap until stopped. Setting them is the process's business, so the CLI does it, not the library.
type memoryGovernor struct {
	done chan struct{}
	wg   sync.WaitGroup
	// prevLimit and prevPercent are the settings before start, which stop restores (prevPercent −2: not set).
	prevLimit   int64
	prevPercent int
}

// governorPoll is how often the governor reads the live heap (a read costs about a microsecond).
const governorPoll = 20 * time.Millisecond

// start sets the limit for analyzing files with jobs at once (see memoryLimitFor) and starts watching the heap.
// Without a limit (GOMEMLIMIT set, a gzip trailer that cannot be read) it changes nothing; a GOGC the user set is kept, and so is the
// default for inputs under the limit's floor.
func (g *memoryGovernor) start(files []string, jobs int) {
	base, ok := memoryLimitFor(files, jobs, os.Getenv)
	if !ok {
		return
	}
	limit := base
	g.prevLimit, g.prevPercent = debug.SetMemoryLimit(limit), -2
	// Small inputs keep the default percentage: their heap is far below the floor of the limit, which would
	// otherwise let it grow to the floor.
	if os.Getenv("GOGC") == "" && limit > minMemoryLimit {
		g.prevPercent = debug.SetGCPercent(gcPercent)
	}
	g.done = make(chan struct{})
	g.wg.Go(func() {
		sample := []metrics.Sample{{Name: "/gc/heap/live:bytes"}, {Name: "/gc/cycles/total:gc-cycles"}}
		tick := time.NewTicker(governorPoll)
		defer tick.Stop()
		var live liveHeap
		for {
			select {
			case <-g.done:
				return
			case <-tick.C:
			}
			metrics.Read(sample)
			if sample[0].Value.Kind() != metrics.KindUint64 || sample[1].Value.Kind() != metrics.KindUint64 {
				return // a runtime without the metrics: keep the fixed limit
			}
			live.observe(sample[1].Value.Uint64(), int64(sample[0].Value.Uint64()))
			if next := nextMemoryLimit(base, live.settled()); next != limit {
				limit = next
				debug.SetMemoryLimit(limit)
			}
		}
	})
}

// stop ends the watch and restores the settings start found (the tests run many commands in one process).
func (g *memoryGovernor) stop() {
	if g.done == nil {
		return
	}
	close(g.done)
	g.wg.Wait()
	g.done = nil
	debug.SetMemoryLimit(g.prevLimit)
	if g.prevPercent != -2 {
		debug.SetGCPercent(g.prevPercent)
	}
}
