package results

import (
	"cmp"
	_ "embed"
	"fmt"
	"html/template"
	"iter"
	"runtime"
	"slices"
	"strings"

	"github.com/memscan/memscan/internal/units"
	"github.com/memscan/memscan/report"
)

// The interactive timeline's script and style, embedded in every page (the page loads nothing).
var (
	//go:embed viewer/viewer.js
	viewerJS string
	//go:embed viewer/viewer.css
	viewerCSS string
)

// maxPageTimelineBytes bounds the timeline data one page embeds (base64 text, all devices of all inputs), so
// that the page stays under about 10 MB; a trace beyond it is shown by memscan view, which sends it on demand.
const maxPageTimelineBytes = 9 << 20

// maxPageDataBytes bounds the timelines and the embedded charts of a page together, so that with its tables,
// script and style it stays under 10 MB (10^7 bytes).
const maxPageDataBytes = 8<<20 + 512<<10

// pageOptions tune renderHTML: served pages (memscan view) fetch each timeline from the server that sent
// them instead of embedding it, and have no chart files beside them.
type pageOptions struct {
	// timelines, when set, are the page's timelines already encoded (newPageTimelineSet).
	timelines *pageTimelineSet
	served    bool
	// remoteAbove is the trace length beyond which a served page leaves the trace on the server and asks for
	// each zoom's columns instead (0: never).
	remoteAbove int
}

// maxSentEvents is the longest trace memscan view sends whole to the page; a longer one stays on the server,
// which answers each zoom and each hovered moment (a browser tab holds about 60 bytes per event of a trace it
// has whole).
const maxSentEvents = 8_000_000

// pageTimelineSet is the timelines of every input of a page (indexed like run.Inputs), encoded in input order
// while the page's budget lasts; left is what they leave of maxPageTimelineBytes. Encoding them is most of a
// page's work and needs no chart, so Write does it while the charts are drawn.
type pageTimelineSet struct {
	inputs []inputTimelines
	left   int
}

// inputTimelines are one input's page timelines, and the note on those left out.
type inputTimelines struct {
	tls  []pageTimeline
	note string
}

// newPageTimelineSet encodes the timelines of every snapshot input of run (pageTimelines).
func newPageTimelineSet(run *report.Run, opts pageOptions) (*pageTimelineSet, error) {
	return pageTimelineSetOf(run, nil, opts)
}

// pageTimelineSetOf is newPageTimelineSet from the timelines enc already holds (nil: encode them here).
func pageTimelineSetOf(run *report.Run, enc *timelineEncodings, opts pageOptions) (*pageTimelineSet, error) {
	set := &pageTimelineSet{inputs: make([]inputTimelines, len(run.Inputs)), left: maxPageTimelineBytes}
	for i, p := range snapshotInputs(run) {
		var pre *encodedTimelines
		if enc != nil {
			pre = &enc.inputs[i]
		}
		tls, note, err := pageTimelines(i, run.Inputs[i], p, &set.left, opts, pre)
		if err != nil {
			return nil, err
		}
		set.inputs[i] = inputTimelines{tls: tls, note: note}
	}
	return set, nil
}

// snapshotInputs yields the snapshot inputs of run: their index in run.Inputs and their snapshot part.
func snapshotInputs(run *report.Run) iter.Seq2[int, *report.SnapshotReport] {
	return func(yield func(int, *report.SnapshotReport) bool) {
		for i, r := range run.Inputs {
			if r == nil {
				continue
			}
			if p, ok := r.Part.(*report.SnapshotReport); ok && !yield(i, p) {
				return
			}
		}
	}
}

// timelineEncodings are the page timelines of every snapshot input of a run (indexed like run.Inputs), encoded
// ahead as tasks of their own beside the charts (Write).
type timelineEncodings struct {
	inputs []encodedTimelines
}

// encodedTimelines are one input's device timelines, or their errors, indexed like its Details.
type encodedTimelines struct {
	tls  []pageTimeline
	errs []error
}

// pageEventCost is the expected cost of encoding one event of a page timeline, in microseconds (runTasks): the
// columns and their compression, 0.1 s for 1.5 M events.
const pageEventCost = 0.065

// timelineTasks returns the encodings of run's page timelines and one task per device that fills them in.
func timelineTasks(run *report.Run) (*timelineEncodings, []task) {
	enc := &timelineEncodings{inputs: make([]encodedTimelines, len(run.Inputs))}
	var tasks []task
	for i, p := range snapshotInputs(run) {
		tasks = append(tasks, enc.inputs[i].tasks(i, p)...)
	}
	return enc, tasks
}

// tasks sizes e for snapshot p (input i) and returns one task per device that encodes its timeline into e.
func (e *encodedTimelines) tasks(i int, p *report.SnapshotReport) []task {
	e.tls, e.errs = make([]pageTimeline, len(p.Details)), make([]error, len(p.Details))
	out := make([]task, len(p.Details))
	for k := range p.Details {
		d := &p.Details[k]
		out[k] = task{cost: 1000 + pageEventCost*float64(d.Events), do: func() {
			e.tls[k], e.errs[k] = newPageTimeline(i, p, d)
		}}
	}
	return out
}

// pageTimelines encodes the full-resolution timeline of every traced device of snapshot p (input i) while
// *budget lasts; note says what was left out and how to see it. A served page only names where each timeline
// is fetched from. pre, when set, holds them already encoded (Write encodes them beside the charts).
func pageTimelines(i int, r *report.Report, p *report.SnapshotReport, budget *int, opts pageOptions, pre *encodedTimelines) (tls []pageTimeline, note string, err error) {
	// The devices are encoded side by side (each is a compression of its own), then kept in order while the
	// budget lasts.
	if pre == nil && !opts.served {
		pre = &encodedTimelines{}
		runTasks(runtime.GOMAXPROCS(0), pre.tasks(i, p))
	}
	for k := range p.Details {
		d := &p.Details[k]
		if opts.served {
			tl := pageTimeline{ID: timelineID(i, d.Device)}
			if src := fmt.Sprintf("timeline/%d/%d", i, d.Device); opts.remoteAbove > 0 && d.Events > opts.remoteAbove {
				tl.Remote = src
			} else {
				tl.Src = src
			}
			tls = append(tls, tl)
			continue
		}
		tl, err := pre.tls[k], pre.errs[k]
		if err != nil {
			return nil, "", err
		}
		size := len(tl.Blob) + len(tl.Meta)
		if size > *budget {
			note = fmt.Sprintf("The timeline of device %d (%d events, %s of data) is too large to embed in this page; `memscan view %s` serves it with every detail.",
				d.Device, d.Events, units.Bytes(int64(size)), r.File)
			continue
		}
		*budget -= size
		tls = append(tls, tl)
	}
	// A trace the analysis did not keep at full resolution (a run of many inputs shares a bound) is not drawn here.
	for _, ts := range p.Timeline {
		if !slices.ContainsFunc(p.Details, func(d report.TimelineDetail) bool { return d.Device == ts.Device }) {
			note = fmt.Sprintf("The trace of device %d was not kept at full resolution in a run of this many inputs; `memscan view %s` draws it.", ts.Device, r.File)
		}
	}
	return tls, note, nil
}

// pageAssets are the viewer's script and style for the template; they are memscan's own constant text.
func pageAssets() (template.JS, template.CSS) {
	return template.JS(viewerJS), template.CSS(viewerCSS)
}

// chartRank orders a page's charts by what a reader needs first: the live set at the peak, the timeline, the
// overview and efficiency, sizes, then the views at the dump; charts it does not name follow by file name.
var chartRank = []string{ChartCategories, ChartTopConsumers, ChartTimeline, ChartOverview, ChartEfficiency, ChartSizes,
	ChartCategoriesDump, ChartTopConsumersDump}

// pageImages orders imgs by chartRank.
func pageImages(imgs []htmlImage) []htmlImage {
	rank := func(im htmlImage) int {
		for k, name := range chartRank {
			if chartTitleOf(name) == im.Title {
				return k
			}
		}
		return len(chartRank)
	}
	out := slices.Clone(imgs)
	slices.SortStableFunc(out, func(a, b htmlImage) int { return cmp.Compare(rank(a), rank(b)) })
	return out
}

// chartTitleOf is the caption embedPNGs gives a chart file ("memory timeline" for memory_timeline.png).
func chartTitleOf(file string) string {
	return strings.ReplaceAll(strings.TrimSuffix(file, ".png"), "_", " ")
}

// hasTrace says whether an input of run has a replayed device trace, which the page draws as its timeline.
func hasTrace(run *report.Run) bool {
	for _, r := range run.Inputs {
		if p, ok := r.Part.(*report.SnapshotReport); ok && (len(p.Details) > 0 || len(p.Timeline) > 0) {
			return true
		}
	}
	return false
}
