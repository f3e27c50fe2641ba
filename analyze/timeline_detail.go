package analyze

import (
	"strings"

	"github.com/memscan/memscan/internal/categorize"
	"github.com/memscan/memscan/internal/detect"
	"github.com/memscan/memscan/report"
	"github.com/memscan/memscan/snapshot"
)

// maxDetailFrames bounds the frames kept of one stack: deeper frames are interpreter start-up that no one reads.
const maxDetailFrames = 48

// detail builds the replay's TimelineDetail from the judged device d, whose elements are r's. It is the last reader
// of r and d, and the analysis's peak memory: the arrays of r that it no longer needs hold the detail's own (the
// allocated series, which the detail does not carry, its times; the elements' sites its sites; their categories
// its stacks), so the caller must not read r's Allocated, cat or site after it.
func (r *devTrace) detail(d *detect.Device) report.TimelineDetail {
	n := len(r.Events)
	t := report.TimelineDetail{Device: r.Device, Events: n, InitialAllocated: r.Initial, InitialReserved: r.Reserved.At(-1),
		Categories: append([]string(nil), r.catNames...), Sites: append([]string(nil), r.siteName...)}
	t.SiteCategory = make([]int32, len(r.siteCat))
	for i, c := range r.siteCat {
		t.SiteCategory[i] = int32(c)
	}
	if r.Events[0].HasTime {
		t.TimeUS = r.Allocated[:n:n]
		for j := range r.Events {
			t.TimeUS[j] = r.Events[j].TimeUS
		}
	}
	// The times were the last thing read of the trace: an analysis that decoded its snapshot itself lets it go
	// now, so that the detail is not built beside it.
	r.a.releaseTrace(r.Device, r.Trace, d)
	prev := r.Reserved.At(-1)
	for k := range r.Reserved.Changes() {
		j, res := r.Reserved.Change(k)
		t.ReservedEvent = append(t.ReservedEvent, int32(j))
		t.ReservedDelta = append(t.ReservedDelta, res-prev)
		prev = res
	}
	m := len(r.Elements)
	t.Start, t.End, t.Size = make([]int32, m), make([]int32, m), make([]int64, m)
	t.Site, t.Stack, t.Reason = r.site[:m:m], r.cat[:m:m], make([]int32, m)
	// Each stack of the replay is interned once: stackOf[k] is stack k's index in t + 2, 0 before it is met.
	stackOf := make([]int32, len(r.Stacks))
	frames := frameSites{byName: map[string]int32{}, byFrame: map[snapshot.Frame]int32{}}
	reasons := map[string]int32{}
	t.StackStart = []int32{0}
	// Elements share attributions: each attribution's reason is worded and interned once.
	reasonOf := make([]int32, len(d.Attrs()))
	for k := range reasonOf {
		reasonOf[k] = -1
	}
	for i, el := range r.Elements {
		t.Start[i], t.End[i], t.Size[i] = el.Start, el.End, el.Size
		if stackOf[el.Stack] == 0 {
			stackOf[el.Stack] = internStack(&t, r.Stacks[el.Stack], frames) + 2
		}
		t.Stack[i] = stackOf[el.Stack] - 2
		a := d.AttrIndex(i)
		if reasonOf[a] < 0 {
			why := reasonText(d.Attr(i))
			k, ok := reasons[why]
			if !ok {
				k = int32(len(t.Reasons))
				reasons[why] = k
				t.Reasons = append(t.Reasons, why)
			}
			reasonOf[a] = k
		}
		t.Reason[i] = reasonOf[a]
	}
	return t
}

// frameSites numbers the detail's frames by site (t.Frames), and remembers each frame's number: the stacks of a
// trace repeat the same frames, and wording a frame's site builds a string (the two-device benchmark file's details
// spent most of their time there).
type frameSites struct {
	byName  map[string]int32
	byFrame map[snapshot.Frame]int32
}

// internStack adds s, which t does not hold yet, and returns its index, −1 for no stack.
func internStack(t *report.TimelineDetail, s *snapshot.Stack, frames frameSites) int32 {
	if s == nil || len(s.Frames) == 0 {
		return -1
	}
	python := false
	for i := range s.Frames {
		python = python || strings.HasSuffix(s.Frames[i].Filename, ".py")
	}
	kept := 0
	for i := range s.Frames {
		f := &s.Frames[i]
		if (python && !strings.HasSuffix(f.Filename, ".py")) || kept == maxDetailFrames {
			continue
		}
		k, ok := frames.byFrame[*f]
		if !ok {
			// Frames of different files can share a site (the same module under two site-packages).
			name := categorize.Site(f)
			if k, ok = frames.byName[name]; !ok {
				k = int32(len(t.Frames))
				frames.byName[name] = k
				t.Frames = append(t.Frames, name)
			}
			frames.byFrame[*f] = k
		}
		t.StackFrames = append(t.StackFrames, k)
		kept++
	}
	k := int32(len(t.StackStart) - 1)
	t.StackStart = append(t.StackStart, int32(len(t.StackFrames)))
	return k
}

// reasonText says what decided an attribution's category.
func reasonText(a *categorize.Attribution) string {
	if a == nil {
		return "no rule"
	}
	if a.DecidedBy == categorize.DecidedByLifetime {
		return "lifetime: " + a.Lifetime
	}
	if a.Rule != "" {
		return "stack rule " + a.Rule
	}
	return "no rule matched the stack"
}

// setWhatIf takes the what-if's reserved memory of t's device from the allocator replays, when there is one.
func setWhatIf(t *report.TimelineDetail, reps []report.AllocatorReplay) {
	for _, r := range reps {
		if r.Device != t.Device || !r.WhatIf {
			continue
		}
		for _, s := range r.WhatIfTimeline {
			t.WhatIfEvent = append(t.WhatIfEvent, int32(s.Index))
			t.WhatIfReserved = append(t.WhatIfReserved, s.Reserved)
		}
	}
}
