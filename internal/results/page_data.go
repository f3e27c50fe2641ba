package results

import (
	"bytes"
	"compress/gzip"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"html/template"

	"github.com/memscan/memscan/internal/plots"
	"github.com/memscan/memscan/phases"
	"github.com/memscan/memscan/report"
)

// The interactive timeline reads two things per device: a JSON object of names and marks (pageMeta) and the
// device's TimelineDetail as one gzip-compressed binary blob in URL-safe base64 (the page escapes none of its
// characters). The blob is columnar, each column a run of LEB128 varints (zig-zag for signed values, deltas
// where values grow): 4.4 bytes per trace event in all on a generated trace after gzip. The browser inflates it
// with its built-in DecompressionStream.
//
// Blob layout, after the version (1): events, blocks, times (0 or events), reserved changes, what-if changes,
// stacks, stack frames; then the columns in this order:
//
//	block start (zig-zag delta from the previous block's start), block end − start (zig-zag), requested size,
//	site, stack + 1 (0: none), reason;
//	event times (the first absolute, then deltas; zig-zag);
//	reserved changes: event (delta from the previous change), bytes (zig-zag);
//	what-if: event (delta), reserved bytes (zig-zag delta from the previous value);
//	stack lengths, then every stack's frame indices.
const pageBlobVersion = 1

// pageMeta is the JSON the viewer reads beside the blob.
type pageMeta struct {
	Input            int       `json:"input"`
	Device           int       `json:"device"`
	Events           int       `json:"events"`
	InitialAllocated int64     `json:"initial_allocated"`
	InitialReserved  int64     `json:"initial_reserved"`
	Categories       []string  `json:"categories"`
	Colors           []string  `json:"colors"` // per category, as the PNG charts colour it
	Sites            []string  `json:"sites"`
	SiteCategory     []int32   `json:"site_category"`
	Frames           []string  `json:"frames"`
	Reasons          []string  `json:"reasons"`
	PeakEvent        int       `json:"peak_event"`
	PeakBytes        int64     `json:"peak_bytes"`
	OOMs             []pageOOM `json:"ooms"`
	// Iterations are [start, end) event spans with their phases, as package phases found them.
	Iterations []pageIteration `json:"iterations"`
	WhatIf     string          `json:"what_if,omitempty"`
	// PeakCategories is the live bytes per category at the peak, for a timeline memscan view keeps on its side
	// (the page orders the stack by it without the blocks).
	PeakCategories []int64 `json:"peak_categories,omitempty"`
}

type pageOOM struct {
	Event     int   `json:"event"`
	Requested int64 `json:"requested"`
}

type pageIteration struct {
	Index     int    `json:"index"`
	Span      [2]int `json:"span"`
	Forward   [2]int `json:"forward"`
	Backward  [2]int `json:"backward"`
	Optimizer [2]int `json:"optimizer"`
}

func spanPair(s phases.Span) [2]int { return [2]int{s.Start, s.End} }

// newPageMeta gathers the names and marks of device d of input i.
func newPageMeta(i int, p *report.SnapshotReport, d *report.TimelineDetail) pageMeta {
	m := pageMeta{Input: i, Device: d.Device, Events: d.Events, InitialAllocated: d.InitialAllocated, InitialReserved: d.InitialReserved,
		Categories: d.Categories, Sites: d.Sites, SiteCategory: d.SiteCategory, Frames: d.Frames, Reasons: d.Reasons,
		PeakEvent: -1, OOMs: []pageOOM{}, Iterations: []pageIteration{}}
	for _, c := range d.Categories {
		m.Colors = append(m.Colors, plots.CategoryHex(c))
	}
	for _, pk := range p.DevicePeaks {
		if pk.Device == d.Device {
			m.PeakEvent, m.PeakBytes = pk.EventIndex, pk.Bytes
		}
	}
	for _, o := range p.OOMs {
		if o.Device == d.Device {
			m.OOMs = append(m.OOMs, pageOOM{Event: o.EventIndex, Requested: o.RequestedBytes})
		}
	}
	for _, tl := range p.Iterations {
		if tl.Device != d.Device {
			continue
		}
		for _, it := range tl.Iterations {
			m.Iterations = append(m.Iterations, pageIteration{Index: it.Index, Span: spanPair(it.Span),
				Forward: spanPair(it.Forward), Backward: spanPair(it.Backward), Optimizer: spanPair(it.Optimizer)})
		}
	}
	for _, rp := range p.AllocatorReplayDevices {
		if rp.Device == d.Device && rp.WhatIf {
			m.WhatIf = rp.Settings
		}
	}
	if rp := p.AllocatorReplay; rp != nil && rp.Device == d.Device && rp.WhatIf {
		m.WhatIf = rp.Settings
	}
	return m
}

// blobWriter appends varints.
type blobWriter struct{ b []byte }

func (w *blobWriter) u(v uint64) { w.b = binary.AppendUvarint(w.b, v) }
func (w *blobWriter) s(v int64)  { w.b = binary.AppendVarint(w.b, v) }

// encodeDetail writes d as the viewer's blob: varint columns, gzip, base64.
func encodeDetail(d *report.TimelineDetail) (string, error) {
	w := &blobWriter{b: make([]byte, 0, 8*len(d.Start)+2*d.Events)}
	stacks := len(d.StackStart) - 1
	for _, v := range []int{pageBlobVersion, d.Events, len(d.Start), len(d.TimeUS), len(d.ReservedEvent), len(d.WhatIfEvent), stacks, len(d.StackFrames)} {
		w.u(uint64(v))
	}
	var prev int64
	for _, s := range d.Start {
		w.s(int64(s) - prev)
		prev = int64(s)
	}
	for i := range d.Start {
		w.s(int64(d.End[i]) - int64(d.Start[i]))
	}
	for _, s := range d.Size {
		w.u(uint64(s))
	}
	for _, s := range d.Site {
		w.u(uint64(s))
	}
	for _, s := range d.Stack {
		w.u(uint64(s + 1))
	}
	for _, s := range d.Reason {
		w.u(uint64(s))
	}
	prev = 0
	for _, t := range d.TimeUS {
		w.s(t - prev)
		prev = t
	}
	prev = 0
	for k, e := range d.ReservedEvent {
		w.u(uint64(int64(e) - prev))
		prev = int64(e)
		w.s(d.ReservedDelta[k])
	}
	prev = 0
	var prevRes int64
	for k, e := range d.WhatIfEvent {
		w.s(int64(e) - prev) // zig-zag: the first what-if sample may stand before the first event (−1)
		prev = int64(e)
		w.s(d.WhatIfReserved[k] - prevRes)
		prevRes = d.WhatIfReserved[k]
	}
	for k := range stacks {
		w.u(uint64(d.StackStart[k+1] - d.StackStart[k]))
	}
	for _, f := range d.StackFrames {
		w.u(uint64(f))
	}
	var z bytes.Buffer
	z.Grow(len(w.b) / 2) // the columns compress to a third or so: one buffer, not a doubling series
	zw, err := gzip.NewWriterLevel(&z, gzip.BestSpeed)
	if err != nil {
		return "", err
	}
	if _, err := zw.Write(w.b); err != nil {
		return "", fmt.Errorf("compressing the timeline of device %d: %w", d.Device, err)
	}
	if err := zw.Close(); err != nil {
		return "", fmt.Errorf("compressing the timeline of device %d: %w", d.Device, err)
	}
	return base64.URLEncoding.EncodeToString(z.Bytes()), nil
}

// pageTimeline is one device's timeline as the page embeds it.
type pageTimeline struct {
	ID   string
	Meta string // JSON of pageMeta
	// Blob is the URL-safe base64 of the gzip-compressed columns: letters, digits, '-', '_' and '=', none of which
	// the page escapes, so the template takes it as it is rather than scanning megabytes for what to escape.
	Blob template.HTML
	// Src is where a served page fetches Meta (Src/meta) and Blob (Src/data) instead; Remote where it asks for
	// Remote/meta and then each zoom's columns (Remote/env) and each hovered moment (Remote/at), for a trace
	// too large to send whole.
	Src, Remote string
}

// timelineID names the timeline of device dev of input i in the page.
func timelineID(i, dev int) string { return fmt.Sprintf("tl-%d-%d", i, dev) }

// newPageTimeline encodes device detail d of input i.
func newPageTimeline(i int, p *report.SnapshotReport, d *report.TimelineDetail) (pageTimeline, error) {
	meta, err := json.Marshal(newPageMeta(i, p, d))
	if err != nil {
		return pageTimeline{}, fmt.Errorf("encoding the timeline of device %d: %w", d.Device, err)
	}
	blob, err := encodeDetail(d)
	if err != nil {
		return pageTimeline{}, err
	}
	return pageTimeline{ID: timelineID(i, d.Device), Meta: string(meta), Blob: template.HTML(blob)}, nil
}
