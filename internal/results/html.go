package results

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"html/template"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/memscan/memscan/internal/atomicfile"
	"github.com/memscan/memscan/internal/plots"
	"github.com/memscan/memscan/internal/units"
	"github.com/memscan/memscan/phases"
	"github.com/memscan/memscan/report"
)

// FileHTML is the one-page report of a run directory.
const FileHTML = "index.html"

// maxEmbeddedPNG bounds one embedded chart and maxEmbeddedTotal all of them (runs over many ranks draw many
// charts); beyond them charts are linked relatively instead, so the page stays quick to load.
const (
	maxEmbeddedPNG   = 8 << 20
	maxEmbeddedTotal = 32 << 20
)

// htmlRows bounds the category, site and allocation tables of the page (summary.json has them all).
const htmlRows = 30

// WriteHTML writes dir/index.html: one self-contained page (inline CSS, charts embedded as data URIs, no script,
// no network) with each input's totals, categories, top sites and allocations, peak, OOMs, recommendations and
// warnings, and the cross-input table. Call it after the charts are drawn so the page embeds them. Every byte
// count is shown exactly, and tagged with data-field (the summary.json key) and data-value (integer bytes) so tools
// and tests can read the numbers back.
func WriteHTML(dir string, run *report.Run) error {
	return writeHTML(dir, run, nil)
}

// writeHTML is WriteHTML with the page's timelines already encoded (nil: encoded here).
func writeHTML(dir string, run *report.Run, tls *pageTimelineSet) error {
	page, err := renderHTML(dir, run, pageOptions{timelines: tls})
	if err != nil {
		return err
	}
	path := filepath.Join(dir, FileHTML)
	if err := atomicfile.WriteBytes(path, page); err != nil {
		return err
	}
	return nil
}

type htmlImage struct {
	Title string
	Src   template.URL
}

// htmlInput is one input's section of the page. R's Header is shown for every kind; the fields of its kind's part
// are set by the one switch in renderHTML, and the template reads them instead of telling the kinds apart.
type htmlInput struct {
	Index int
	R     *report.Report
	// Snapshot is the part of an allocator snapshot, Tracer the primary device of a tracer file, Timeline a
	// profiler timeline, Log a training log; the others are nil.
	Snapshot *report.SnapshotReport
	Tracer   *report.TracerDeviceView
	Timeline *report.TimelineView
	Log      *report.LogView
	// Totals are a snapshot's allocator totals, Peak the live set at its trace's peak (a timeline's peak is in
	// its own section), Replays its allocator replays: recorded vs replayed vs what-if.
	Totals  []htmlField
	Peak    *report.Peak
	Replays []htmlReplay
	// Categories says what R.Categories counts; Dump is " at the dump" when the sites and allocations listed
	// were live at the dump rather than at the peak.
	Categories, Dump string
	Top              []allocGroup
	Images           []htmlImage
	// Answer leads the section; Timelines are the interactive timelines of a snapshot's devices (page.go), and
	// TimelineNote says which were too large to embed.
	Answer       answer
	Timelines    []pageTimeline
	TimelineNote string
}

type htmlField struct {
	Key   string
	Label string
	Value int64
}

func renderHTML(dir string, run *report.Run, opts pageOptions) ([]byte, error) {
	subdirs := inputSubdirs(run)
	tls := opts.timelines
	if tls == nil {
		var err error
		if tls, err = newPageTimelineSet(run, opts); err != nil {
			return nil, err
		}
	}
	var inputs []htmlInput
	for i, r := range run.Inputs {
		if r == nil {
			continue
		}
		// Group the whole list, then cap the rows: capping first would count only the copies that happen to
		// fall in the first rows (×2 here where the text report says ×8).
		top := groupAllocations(r.Top, len(r.Top))
		in := htmlInput{Index: i, R: r, Top: top[:min(len(top), htmlRows)], Answer: newAnswer(r)}
		switch p := r.Part.(type) {
		case *report.SnapshotReport:
			in.snapshot(r, p)
			in.Timelines, in.TimelineNote = tls.inputs[i].tls, tls.inputs[i].note
		case *report.TracerReport:
			in.Tracer, in.Categories = p.Tracer.Primary(), "listed tensors alive at the peak"
		case *report.TimelineReport:
			in.Timeline, in.Categories = p.MemoryTimeline, "at the peak"
		case *report.LogReport:
			in.Log = p.Log
		}
		inputs = append(inputs, in)
	}
	// The charts get what the timelines leave of the page's budget, the cross-input ones first as they come first;
	// beyond it they are linked (they lie beside the page).
	budget := min(int64(maxEmbeddedTotal), int64(maxPageDataBytes-(maxPageTimelineBytes-tls.left)))
	var cross []htmlImage
	if len(run.Inputs) > 1 && dir != "" {
		var err error
		if cross, err = embedPNGs(dir, "", &budget, nil); err != nil {
			return nil, err
		}
	}
	for k := range inputs {
		in := &inputs[k]
		if dir == "" {
			continue
		}
		var skip func(string) bool
		if len(in.Timelines) > 0 { // the interactive timeline shows what the timeline PNG shows, and more
			skip = func(name string) bool { return strings.HasPrefix(name, strings.TrimSuffix(ChartTimeline, ".png")) }
		}
		imgs, err := embedPNGs(filepath.Join(dir, subdirs[in.Index]), subdirs[in.Index], &budget, skip)
		if err != nil {
			return nil, err
		}
		in.Images = pageImages(imgs)
	}
	var buf bytes.Buffer
	js, css := pageAssets()
	data := map[string]any{"Run": run, "Inputs": inputs, "CrossImages": cross, "Rows": htmlRows, "JS": js, "CSS": css}
	if run.Cross != nil {
		data["Cross"] = newCrossView(run.Cross)
	}
	err := htmlTemplate.Execute(&buf, data)
	if err != nil {
		return nil, fmt.Errorf("rendering %s: %w", FileHTML, err)
	}
	return buf.Bytes(), nil
}

// embedPNGs returns the PNG charts directly in dir, sorted by name, as data URIs while *budget lasts (relative
// links after that, and for huge files).
func embedPNGs(dir, rel string, budget *int64, skip func(name string) bool) ([]htmlImage, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		if os.IsNotExist(err) {
			return nil, nil
		}
		return nil, fmt.Errorf("listing charts: %w", err)
	}
	var out []htmlImage
	for _, e := range entries {
		if e.IsDir() || !strings.HasSuffix(e.Name(), ".png") || (skip != nil && skip(e.Name())) {
			continue
		}
		title := chartTitleOf(e.Name())
		info, err := e.Info()
		if err != nil {
			return nil, fmt.Errorf("reading chart %s: %w", e.Name(), err)
		}
		// The budget counts what the page holds: the base64 text, a third larger than the file.
		embedded := int64(base64.StdEncoding.EncodedLen(int(info.Size())))
		if info.Size() > maxEmbeddedPNG || embedded > *budget {
			out = append(out, htmlImage{Title: title, Src: template.URL(filepath.ToSlash(filepath.Join(rel, e.Name())))})
			continue
		}
		data, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			return nil, fmt.Errorf("reading chart %s: %w", e.Name(), err)
		}
		*budget -= embedded
		out = append(out, htmlImage{Title: title, Src: template.URL("data:image/png;base64," + base64.StdEncoding.EncodeToString(data))})
	}
	slices.SortFunc(out, func(a, b htmlImage) int { return strings.Compare(a.Title, b.Title) })
	return out, nil
}

var htmlFuncs = template.FuncMap{
	"human":          units.Bytes,
	"pytorchSize":    units.PyTorchBytes, // OOM sizes as PyTorch's message writes them
	"exact":          GroupDigits,
	"pct":            func(v float64) string { return strconv.FormatFloat(v, 'f', 1, 64) },
	"time":           FormatTimeUS,
	"limit":          func(n int, xs any) any { return limitSlice(xs, n) },
	"more":           func(n, total int) int { return total - n },
	"hasMsg":         func(s string) bool { return s != "" },
	"orDash":         bytesOrDash,
	"count":          countLabel,
	"merged":         moduleCount,
	"countOrDash":    countOrDash,
	"imbalanceScope": ImbalanceScope,
	"intOrDash":      intOrDash,
	"span":           func(sp phases.Span) string { return spanText(sp, 0) },
	"peakSentence":   peakSentence,
	"heldShare":      func(b, total int64) string { return shortPercent(b, total) },
	"barPct":         func(b, total int64) string { return barWidth(b, total) },
	"oomSentence":    oomSentence,
	"saving":         findingSavingText,
	"catColor":       plots.CategoryHex,
	"rawJSON":        func(s string) template.JS { return template.JS(s) },
}

func limitSlice(xs any, n int) any {
	switch v := xs.(type) {
	case []report.CategoryStat:
		return v[:min(n, len(v))]
	case []report.SiteStat:
		return v[:min(n, len(v))]
	case []report.Allocation:
		return v[:min(n, len(v))]
	case []report.ModuleStat:
		return v[:min(n, len(v))]
	case []phases.Iteration:
		return v[:min(n, len(v))]
	}
	return xs
}

var htmlTemplate = template.Must(template.New("index").Funcs(htmlFuncs).Parse(`<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>memscan report</title>
<style>
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,"Liberation Sans",sans-serif;margin:0;color:#1d1d1f;background:#fafafa}
main{max-width:1200px;margin:0 auto;padding:16px 24px 48px}
h1{font-size:22px;margin:8px 0 4px}h2{font-size:18px;margin:28px 0 8px;border-bottom:1px solid #ddd;padding-bottom:4px}
h3{font-size:15px;margin:18px 0 6px}
.meta{color:#555;font-size:13px}
.scroll{overflow-x:auto}
table{border-collapse:collapse;background:#fff;margin:4px 0 8px;font-size:13px}
th,td{border:1px solid #e2e2e2;padding:3px 8px;text-align:left;vertical-align:top}
th{background:#f0f0f0}
td.num{text-align:right;white-space:nowrap;font-variant-numeric:tabular-nums}
td.site{font-family:ui-monospace,Menlo,Consolas,monospace;font-size:12px;word-break:break-all}
small{color:#777}
.rec{background:#fff;border-left:4px solid #c44e52;padding:6px 10px;margin:6px 0}
.rec.info{border-color:#4c72b0}.rec.warning{border-color:#dd8452}
.warn{color:#8a4b00}
figure{margin:10px 0;background:#fff;border:1px solid #e2e2e2;padding:6px}
figure img{max-width:100%;height:auto;display:block}
figcaption{font-size:12px;color:#555}
.answer{background:#fff;border:1px solid #d8d8d8;border-left:5px solid #c0392b;padding:8px 14px;margin:8px 0}
.answer .lead{font-size:16px;margin:4px 0}.answer .held{margin:4px 0}.answer p{margin:4px 0}
.answer-cols{display:grid;grid-template-columns:minmax(0,1fr) minmax(0,1fr);gap:4px 28px}
.brief{margin:4px 0;padding-left:20px;font-size:13px}.brief li.critical,.brief li.warning{font-weight:600}
.hbar{display:grid;grid-template-columns:minmax(100px,150px) 1fr 120px;gap:1px 8px;align-items:center;font-size:12px;line-height:15px}
.hbar .b{height:12px;min-width:1px}.hbar .v{font-variant-numeric:tabular-nums;text-align:right}
.oom{color:#a01010;font-weight:600}.ranked{margin:4px 0;padding-left:22px}.ranked .save{font-weight:600}
nav.toc{background:#fff;border:1px solid #e2e2e2;padding:6px 12px;font-size:13px}nav.toc ol{margin:4px 0}
details.input>summary{cursor:pointer;font-size:18px;font-weight:600;margin:24px 0 6px;border-bottom:1px solid #ddd;padding-bottom:4px}
details.charts>summary{cursor:pointer;font-size:15px;font-weight:600;margin:18px 0 6px}
{{.CSS}}
</style>
</head>
<body><main>
<h1>memscan report</h1>
<p class="meta">{{.Run.Tool}} · report version {{.Run.Version}} · {{len .Run.Inputs}} input(s){{if .Run.Failures}} · {{len .Run.Failures}} failed{{end}}</p>
{{if gt (len .Inputs) 1}}<nav class="toc"><b>Contents</b><ol>{{if .Run.Cross}}<li><a href="#across">Cross-input summary</a></li>{{end}}{{range .Inputs}}<li><a href="#input-{{.Index}}">{{.R.File}}</a>{{with .R.Peak}} · peak {{human .Bytes}}{{end}}</li>{{end}}</ol></nav>{{end}}
{{if .Run.Failures}}<h2>Inputs that could not be analyzed</h2><ul>{{range .Run.Failures}}<li><code>{{.File}}</code>: {{.Error}}</li>{{end}}</ul>{{end}}
{{if .Run.Cross}}{{with .Run.Cross}}
<h2 id="across">Across inputs</h2>
{{if .NotRankSet}}<p>Not compared as ranks: {{.NotRankSet}}.</p>{{else if gt $.Cross.Snapshots 1}}<p>Reserved{{imbalanceScope .}}: max <span data-field="cross.max_reserved_bytes" data-value="{{.MaxReservedBytes}}">{{human .MaxReservedBytes}}</span>,
median <span data-field="cross.median_reserved_bytes" data-value="{{.MedianReservedBytes}}">{{human .MedianReservedBytes}}</span>,
imbalance {{pct .ImbalancePct}} %.</p>{{end}}
{{with .Tracer}}<p>Tracer peak: max {{human .MaxPeakBytes}} (rank {{.MaxPeakRank}}), median {{human .MedianPeakBytes}}, min {{human .MinPeakBytes}}, imbalance {{pct .ImbalancePct}} %.</p>{{end}}
<div class="scroll"><table><tr>{{range $.Cross.Header}}<th>{{.}}</th>{{end}}</tr>
{{range $.Cross.Rows}}<tr><td class="site">{{.File}}</td>{{range .Cells}}<td class="num">{{.}}</td>{{end}}</tr>
{{end}}</table></div>{{end}}
{{range $.CrossImages}}<figure><img alt="{{.Title}}" src="{{.Src}}"><figcaption>{{.Title}}</figcaption></figure>{{end}}
{{end}}
{{range .Inputs}}{{$in := .}}{{with .R}}
<section data-input="{{$in.Index}}" id="input-{{$in.Index}}">
<details class="input" open><summary>{{.File}}</summary>
<p class="meta">format {{.Format}}{{if .TorchFormat}} · torch {{.TorchFormat}}{{end}}{{if ge .Rank 0}} · rank {{.Rank}}{{end}}{{if ge .Iteration 0}} · iteration {{.Iteration}}{{end}}{{if .Devices}} · {{if eq (len .Devices) 1}}device{{else}}devices{{end}} {{range $k, $d := .Devices}}{{if $k}}, {{end}}{{$d}}{{end}}{{end}}{{with $in.Snapshot}} · {{.Segments}} segments, {{.Blocks}} blocks{{end}}</p>
{{with $in.Answer}}{{if or .Peak .OOMs}}<div class="answer" id="answer-{{$in.Index}}">
{{with .Peak}}<p class="lead" data-answer="peak" data-value="{{.Bytes}}">{{peakSentence .}}</p>{{end}}
{{if .MaxReserved}}<p>The allocator reserved at most {{human .MaxReserved}} over the trace.</p>{{end}}
{{range .OOMs}}<p class="oom">{{oomSentence .}}</p>{{end}}
<div class="answer-cols">{{if .Held}}<div class="held"><b>What held the peak</b>{{$p := .Peak}}<div class="hbar">{{range .Held}}<span>{{.Name}}</span><span><span class="b" style="display:block;width:{{barPct .Bytes $p.Bytes}};background:{{catColor .Name}}"></span></span><span class="v">{{human .Bytes}} · {{heldShare .Bytes $p.Bytes}}</span>{{end}}</div>
{{if .Components}}<p><small>By component (as memscan static counts them):{{range $k, $c := .Components}}{{if $k}},{{end}} {{$c.Name}} {{human $c.Bytes}}{{end}}.</small></p>{{end}}</div>{{end}}
<div class="held"><b>Findings, by the bytes they would save</b>{{if .Findings}}<ol class="brief">{{range .Findings}}<li class="{{.Severity}}">{{.Title}}{{with saving .}} <span class="save">({{.}})</span>{{end}}</li>{{end}}</ol>{{else}}<p>None: no threshold was crossed.</p>{{end}}</div></div>
</div>{{end}}{{end}}
{{range $in.Timelines}}{{if .Remote}}<div class="timeline" id="{{.ID}}" data-remote="{{.Remote}}"></div>
{{else if .Src}}<div class="timeline" id="{{.ID}}" data-src="{{.Src}}"></div>
{{else}}<div class="timeline" id="{{.ID}}" data-meta="{{.ID}}-meta" data-blob="{{.ID}}-blob"><script type="application/json" id="{{.ID}}-meta">{{.Meta | rawJSON}}</script><script type="text/plain" id="{{.ID}}-blob">{{.Blob}}</script></div>
{{end}}{{end}}{{with $in.TimelineNote}}<p class="warn">{{.}}</p>{{end}}
{{with $in.Answer.Findings}}<h3>Findings in detail</h3><ol class="ranked">{{range .}}<li class="rec {{.Severity}}"><b>{{.Title}}</b>{{with saving .}} <span class="save">({{.}})</span>{{end}}<br>{{.Evidence}}{{if .Advice}}<br><small>{{.Advice}}</small>{{end}}</li>{{end}}</ol>{{end}}
{{if $in.Totals}}<h3>Totals{{$in.Dump}}</h3>
<table><tr><th>measure</th><th>bytes</th><th>exact</th></tr>
{{range $in.Totals}}<tr><td>{{.Label}}</td><td class="num">{{human .Value}}</td><td class="num" data-field="{{.Key}}" data-value="{{.Value}}">{{exact .Value}}</td></tr>{{end}}
<tr><td>efficiency at the dump (requested / reserved)</td><td class="num" data-field="efficiency_pct" data-value="{{$in.Snapshot.EfficiencyPct}}">{{pct $in.Snapshot.EfficiencyPct}} %</td><td></td></tr>
</table>{{end}}
{{with $in.Tracer}}<h3>Memory tracer peak</h3>
<p>Device {{.Device}}: peak <span data-field="peak_bytes" data-value="{{.PeakBytes}}">{{human .PeakBytes}}</span>, listed tensors <span data-field="listed_bytes" data-value="{{.ListedBytes}}">{{human .ListedBytes}}</span> ({{.Tensors}} tensors), not attributable {{human .GapBytes}}.{{if .GapExplanation}}<br><small>{{.GapExplanation}}</small>{{end}}</p>
{{if .Phases}}<table><tr><th>phase</th><th>bytes</th><th>share</th><th>tensors</th></tr>{{range .Phases}}<tr><td>{{.Name}}</td><td class="num">{{human .Bytes}}</td><td class="num">{{pct .SharePct}} %</td><td class="num">{{.Count}}</td></tr>{{end}}</table>{{end}}
{{if .Modules}}<div class="scroll"><table class="sortable"><tr><th>module (repeated layers merged)</th><th>bytes</th><th>share</th><th>tensors</th><th>modules</th></tr>{{range limit $.Rows .Modules}}<tr><td class="site">{{.Pattern}}</td><td class="num" data-value="{{.Bytes}}">{{human .Bytes}}</td><td class="num">{{pct .SharePct}} %</td><td class="num">{{.Count}}</td><td class="num">{{merged .}}</td></tr>{{end}}</table></div>{{end}}
{{end}}
{{with $in.Timeline}}<h3>torch.profiler memory timeline</h3>
<p>Peak {{human .PeakBytes}} at point {{.PeakIndex}} of {{.Points}}; {{human .FinalBytes}} at the end. What each category held then is under Categories.</p>
{{end}}
{{with $in.Log}}<h3>Training log ({{.Dialect}})</h3>
<p>{{.Records}} memory records in {{.Lines}} lines; peak allocated {{orDash .PeakAllocatedBytes}}, peak reserved {{orDash .PeakReservedBytes}}{{if ge .PeakRank 0}} (rank {{.PeakRank}}){{end}}.
{{with .Theoretical}}Theoretical: weight and optimizer {{orDash .WeightAndOptimizerByte}}, activation {{orDash .ActivationBytes}}, total {{orDash .TotalBytes}}.{{end}}</p>
{{end}}
{{with $in.Peak}}<h3>Peak</h3>
<p>Device {{.Device}}: <span data-field="peak.bytes" data-value="{{.Bytes}}">{{human .Bytes}}</span> live at trace event {{.EventIndex}}{{if .TimeUS}} ({{time .TimeUS}}){{end}}{{if gt .Iteration 0}}, in iteration {{.Iteration}} {{.Phase}}{{end}}.{{if .LifetimeDecidedBytes}} <small>{{human .LifetimeDecidedBytes}} of it categorized by lifetime (no stack, or only autograd/optimizer machinery).</small>{{end}}</p>
{{if .Categories}}<table><tr><th>category at peak</th><th>bytes</th></tr>{{range .Categories}}<tr data-peak-category="{{.Name}}"><td>{{.Name}}</td><td class="num">{{human .Bytes}}</td></tr>{{end}}</table>{{end}}
{{if .Components}}<table><tr><th>component at peak (as memscan static counts)</th><th>bytes</th></tr>{{range .Components}}<tr><td>{{.Name}}</td><td class="num">{{human .Bytes}}</td></tr>{{end}}</table>{{end}}
{{if .Sites}}<div class="scroll"><table class="sortable"><tr><th>site at peak</th><th>category</th><th>bytes</th></tr>{{range limit $.Rows .Sites}}<tr><td class="site">{{.Site}}</td><td>{{.Category}}</td><td class="num" data-value="{{.Bytes}}">{{human .Bytes}}</td></tr>{{end}}</table></div>{{end}}
{{end}}
{{with $in.Snapshot}}{{range .Iterations}}{{if .Iterations}}<h3>Iterations and phases (device {{.Device}}, from {{.Source}})</h3>
<div class="scroll"><table><tr><th>iteration</th><th>events</th><th>forward</th><th>backward</th><th>optimizer</th></tr>
{{range limit $.Rows .Iterations}}<tr><td class="num">{{.Index}}{{if not .Complete}}*{{end}}</td><td class="num">{{span .Span}}</td><td class="num">{{span .Forward}}</td><td class="num">{{span .Backward}}</td><td class="num">{{span .Optimizer}}</td></tr>{{end}}
</table></div>{{end}}{{end}}{{end}}
{{if .Categories}}<h3>Categories ({{$in.Categories}})</h3>
<table class="sortable"><tr><th>category</th><th>bytes</th><th>exact</th><th>count</th></tr>
{{range .Categories}}<tr data-category="{{.Name}}"><td>{{.Name}}</td><td class="num" data-sort="{{.Bytes}}">{{human .Bytes}}</td><td class="num" data-field="categories.bytes" data-value="{{.Bytes}}">{{exact .Bytes}}</td><td class="num">{{countOrDash .Count}}</td></tr>{{end}}
</table>{{end}}
{{if .Sites}}<h3>Top creation sites{{$in.Dump}}</h3>
<div class="scroll"><table class="sortable"><tr><th>site</th><th>category</th><th>bytes</th><th>count</th></tr>
{{range limit $.Rows .Sites}}<tr><td class="site">{{.Site}}</td><td>{{.Category}}</td><td class="num" data-sort="{{.Bytes}}">{{human .Bytes}}</td><td class="num">{{.Count}}</td></tr>{{end}}
</table></div>{{if gt (len .Sites) $.Rows}}<p><small>{{more $.Rows (len .Sites)}} more sites in summary.json</small></p>{{end}}{{end}}
{{if $in.Top}}<h3>Largest live allocations{{$in.Dump}}</h3>
<div class="scroll"><table class="sortable"><tr><th>size</th><th>requested</th><th>count</th><th>category</th><th>site</th><th>device</th></tr>
{{range $in.Top}}<tr><td class="num" data-field="top.size" data-value="{{.Size}}" data-count="{{.Count}}">{{human .Size}}</td><td class="num" data-sort="{{.RequestedSize}}">{{human .RequestedSize}}</td><td class="num">{{count .Count}}</td><td>{{.Category}}</td><td class="site">{{.Site}}</td><td class="num">{{intOrDash .Device}}</td></tr>{{end}}
</table></div>{{end}}
{{range $in.Replays}}<h3>Allocator replay (device {{.Device}})</h3>
<p>Recorded settings: {{.Recorded}} · capacity: {{.Capacity}}<br><small>{{.Check}}</small></p>
<div class="scroll"><table><tr><th>run</th><th>settings</th><th>peak reserved</th><th>exact</th><th>vs recorded</th><th>segments</th><th>free at max reserved</th></tr>
{{range .Rows}}<tr><td>{{.Name}}</td><td><code>{{.Settings}}</code></td><td class="num">{{human .PeakReserved}}</td><td class="num" data-field="allocator_replay.{{.Field}}" data-device="{{.Device}}" data-value="{{.PeakReserved}}">{{exact .PeakReserved}}</td><td class="num">{{.Delta}}</td><td class="num">{{.Segments}}</td><td class="num">{{.Free}}</td></tr>
{{end}}</table></div>{{end}}
{{with $in.Snapshot}}{{if .OOMs}}<h3>Out-of-memory events</h3>
<table><tr><th>device</th><th>event</th><th>requested</th><th>free on device</th><th>site</th></tr>
{{range .OOMs}}<tr><td class="num">{{.Device}}</td><td class="num">{{.EventIndex}}</td><td class="num" data-field="ooms.requested_bytes" data-value="{{.RequestedBytes}}">{{pytorchSize .RequestedBytes}}</td><td class="num">{{pytorchSize .DeviceFreeBytes}}</td><td class="site">{{.Site}}</td></tr>{{end}}
</table>{{range .OOMs}}{{with .Explained}}<p>Event {{.Event}}: {{human .Live.Bytes}} live{{if gt .Live.Iteration 0}} in iteration {{.Live.Iteration}} {{.Live.Phase}}{{end}}; by phase allocated in:{{range .Live.ByPhase}} {{.Name}} {{human .Bytes}};{{end}} by category:{{range .Live.ByCategory}} {{.Name}} {{human .Bytes}};{{end}}{{if .PerLayerBytes}} {{.LayersDone}} of {{.Layers}} layers had passed the failing point at {{human .PerLayerBytes}} each: the forward would reach about {{human .ProjectedBytes}} against {{human .CapacityBytes}} available.{{end}}</p>{{end}}{{if .Remedies}}<table><tr><th>single change (--static)</th><th>peak allocated</th><th>peak reserved</th><th>fits</th></tr>{{range .Remedies}}<tr><td>{{.Change}}</td><td class="num">{{human .PeakAllocatedBytes}}</td><td class="num">{{human .PeakReservedBytes}}</td><td>{{if .Fits}}yes{{else}}no{{end}}</td></tr>{{end}}</table>{{end}}{{end}}{{end}}{{end}}
{{if .Warnings}}<h3>Warnings</h3><ul>{{range .Warnings}}<li class="warn">{{.}}</li>{{end}}</ul>{{end}}
{{end}}
{{with $in.Images}}<details class="charts"{{if le (len $.Inputs) 1}} open{{end}}><summary>Charts ({{len .}})</summary>
{{range .}}<figure><img alt="{{.Title}}" src="{{.Src}}" loading="lazy" decoding="async"><figcaption>{{.Title}}</figcaption></figure>{{end}}
</details>{{end}}
</details>
</section>
{{end}}
<p class="meta">Generated by memscan. This page is self-contained: it loads nothing from the network.</p>
</main>
<script>{{.JS}}</script>
</body></html>
`))
