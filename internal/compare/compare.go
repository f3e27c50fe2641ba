package compare

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/memscan/memscan/findings"
	"github.com/memscan/memscan/report"
)

// Version is bumped whenever a field of Comparison changes meaning or is removed.
const Version = 1

// Residual row names: the bytes a table's rows do not cover, so every table's deltas add up to its total's delta.
const (
	OtherSites      = "(other sites)"
	Uncategorized   = "(not in any category)"
	OtherModules    = "(other modules)"
	AllocatedBasis  = "allocated_bytes"
	PeakBytesBasis  = "peak_bytes"
	ListedBytesBase = "listed_bytes"
)

// Input is one side of a comparison: its report and, when it came from a snapshot, its segments (run
// directories and tracer JSON carry none).
type Input struct {
	Report   *report.Report
	Segments []SegmentID // nil when unknown
}

// SegmentID is one segment of a snapshot. Two snapshots' segments are paired by device and size, in address order
// (diffSegments), not by address as _memory_viz compare does: two processes share no addresses.
type SegmentID struct {
	Device  int    `json:"device" msgpack:"device"`
	Address uint64 `json:"address" msgpack:"address"`
	Size    int64  `json:"size" msgpack:"size"`
	Stream  uint64 `json:"stream" msgpack:"stream"`
}

// Comparison holds one Diff per compared input against the baseline.
type Comparison struct {
	Version  int    `json:"version" msgpack:"version"`
	Tool     string `json:"tool" msgpack:"tool"`
	Baseline string `json:"baseline" msgpack:"baseline"`
	Diffs    []Diff `json:"diffs" msgpack:"diffs"`
	// Granularity is how the site tables key code: GranularityFunctions or GranularityLines.
	Granularity string `json:"granularity,omitempty" msgpack:"granularity,omitempty"`
}

// Granularities of the site tables, as pprof names them: a function (file and function, pprof's default) is the
// same code in two versions of a script whose lines moved; a line is one statement.
const (
	GranularityFunctions = "functions"
	GranularityLines     = "lines"
)

// Options control a comparison.
type Options struct {
	// Granularity keys the site tables: GranularityFunctions ("" too) or GranularityLines.
	Granularity string
}

// SiteKey is site ("file:line:function") at granularity: without its line for functions, whole for lines. The
// line is the first ":<digits>:" (a Windows drive's colon is followed by no digits, a C++ function's "::" by
// none either); sites without one ("<no stack recorded>") stay as they are.
func SiteKey(site, granularity string) string {
	if granularity == GranularityLines {
		return site
	}
	for i := strings.IndexByte(site, ':'); i >= 0; {
		j := i + 1
		for j < len(site) && site[j] >= '0' && site[j] <= '9' {
			j++
		}
		if j > i+1 && j < len(site) && site[j] == ':' {
			return site[:i] + site[j:]
		}
		k := strings.IndexByte(site[i+1:], ':')
		if k < 0 {
			break
		}
		i += 1 + k
	}
	return site
}

// Delta is one row of a side-by-side table: the value before and after and the change.
type Delta struct {
	Name   string `json:"name" msgpack:"name"`
	Before int64  `json:"before" msgpack:"before"`
	After  int64  `json:"after" msgpack:"after"`
	Delta  int64  `json:"delta" msgpack:"delta"` // After − Before
	// Category is set for site rows.
	Category    string `json:"category,omitempty" msgpack:"category,omitempty"`
	BeforeCount int    `json:"before_count,omitempty" msgpack:"before_count,omitempty"`
	AfterCount  int    `json:"after_count,omitempty" msgpack:"after_count,omitempty"`
}

// DeltaPct is the change relative to Before in percent; 0 when Before is 0.
func (d Delta) DeltaPct() float64 {
	if d.Before == 0 {
		return 0
	}
	return float64(d.Delta) / float64(d.Before) * 100
}

// Table is a set of rows that add up to a total: Σ rows.Before == Total.Before and Σ rows.After == Total.After
// (a residual row is added when the inputs' own rows do not cover the total), so Σ rows.Delta == Total.Delta.
type Table struct {
	// Basis names the total the rows add up to, e.g. "allocated_bytes".
	Basis string  `json:"basis" msgpack:"basis"`
	Total Delta   `json:"total" msgpack:"total"`
	Rows  []Delta `json:"rows" msgpack:"rows"`
}

// SegmentDiff lists segments present on one side only.
type SegmentDiff struct {
	Common        int         `json:"common" msgpack:"common"`
	New           []SegmentID `json:"new" msgpack:"new"`
	Vanished      []SegmentID `json:"vanished" msgpack:"vanished"`
	NewBytes      int64       `json:"new_bytes" msgpack:"new_bytes"`
	VanishedBytes int64       `json:"vanished_bytes" msgpack:"vanished_bytes"`
}

// Diff compares one input (After) with the baseline (Before).
type Diff struct {
	Before       string `json:"before" msgpack:"before"`
	After        string `json:"after" msgpack:"after"`
	BeforeFormat string `json:"before_format" msgpack:"before_format"`
	AfterFormat  string `json:"after_format" msgpack:"after_format"`
	// Totals are the allocator totals (bytes, plus segment and block counts) side by side.
	Totals []Delta `json:"totals" msgpack:"totals"`
	// Categories and Sites are live memory at snapshot time; they add up to allocated_bytes (block bytes).
	Categories Table `json:"categories" msgpack:"categories"`
	Sites      Table `json:"sites" msgpack:"sites"`
	// Modules group the sites by source file (or the tracer's merged module patterns).
	Modules Table `json:"modules" msgpack:"modules"`
	// PeakCategories and PeakSites attribute the change of the trace peak; nil unless both sides have a peak.
	PeakCategories *Table `json:"peak_categories,omitempty" msgpack:"peak_categories,omitempty"`
	PeakSites      *Table `json:"peak_sites,omitempty" msgpack:"peak_sites,omitempty"`
	// Segments is nil unless both sides came from snapshots.
	Segments *SegmentDiff `json:"segments,omitempty" msgpack:"segments,omitempty"`
	OOMs     Delta        `json:"ooms" msgpack:"ooms"`
	// Findings are the findings that fired on either side, the baseline's first: what a change of settings or
	// batch shape cured or caused (the fragmentation of variable lengths, a leak) beside the byte tables.
	Findings []FindingChange `json:"findings" msgpack:"findings"`
	Warnings []string        `json:"warnings" msgpack:"warnings"`
}

// FindingChange is one finding, by ID, on both sides: its severity and measured value on each side where it
// fired ("" and 0 where it did not).
type FindingChange struct {
	ID             findings.ID       `json:"id" msgpack:"id"`
	Title          string            `json:"title" msgpack:"title"`
	Unit           findings.Unit     `json:"unit,omitempty" msgpack:"unit,omitempty"`
	BeforeSeverity findings.Severity `json:"before_severity" msgpack:"before_severity"`
	AfterSeverity  findings.Severity `json:"after_severity" msgpack:"after_severity"`
	BeforeValue    float64           `json:"before_value" msgpack:"before_value"`
	AfterValue     float64           `json:"after_value" msgpack:"after_value"`
}

// diffFindings pairs the two sides' findings by ID. A finding that fires more than once on a side (one per
// device) is paired by its first firing; its title is the after side's where both have it.
func diffFindings(before, after []findings.Finding) []FindingChange {
	var out []FindingChange
	at := map[findings.ID]int{}
	for _, r := range before {
		if _, ok := at[r.ID]; ok {
			continue
		}
		at[r.ID] = len(out)
		out = append(out, FindingChange{ID: r.ID, Title: r.Title, Unit: r.Unit, BeforeSeverity: r.Severity, BeforeValue: r.Value})
	}
	seen := map[findings.ID]bool{}
	for _, r := range after {
		if seen[r.ID] {
			continue
		}
		seen[r.ID] = true
		i, ok := at[r.ID]
		if !ok {
			i = len(out)
			out = append(out, FindingChange{ID: r.ID, Unit: r.Unit})
		}
		f := &out[i]
		f.Title, f.AfterSeverity, f.AfterValue = r.Title, r.Severity, r.Value
	}
	return out
}

// Compare diffs every other input against the baseline, keying code by function.
func Compare(tool string, baseline Input, others []Input) (*Comparison, error) {
	return CompareWith(tool, baseline, others, Options{})
}

// CompareWith diffs every other input against the baseline under opts.
func CompareWith(tool string, baseline Input, others []Input, opts Options) (*Comparison, error) {
	if baseline.Report == nil {
		return nil, fmt.Errorf("compare: baseline has no report")
	}
	g := cmp.Or(opts.Granularity, GranularityFunctions)
	if g != GranularityFunctions && g != GranularityLines {
		return nil, fmt.Errorf("compare: granularity %q (want %s or %s)", g, GranularityFunctions, GranularityLines)
	}
	c := &Comparison{Version: Version, Tool: tool, Baseline: baseline.Report.File, Granularity: g}
	for i, o := range others {
		if o.Report == nil {
			return nil, fmt.Errorf("compare: input %d has no report", i+1)
		}
		c.Diffs = append(c.Diffs, diffReports(baseline, o, g))
	}
	return c, nil
}

func diffReports(b, a Input, granularity string) Diff {
	rb, ra := b.Report, a.Report
	d := Diff{Before: rb.File, After: ra.File, BeforeFormat: rb.Format, AfterFormat: ra.Format, Warnings: []string{}}
	tot := func(name string, x, y int64) {
		d.Totals = append(d.Totals, Delta{Name: name, Before: x, After: y, Delta: y - x})
	}
	// Inputs without allocator state (tracer JSON, timelines, logs) show zero totals.
	tb, _ := rb.AllocatorTotals()
	ta, _ := ra.AllocatorTotals()
	tot("reserved_bytes", tb.ReservedBytes, ta.ReservedBytes)
	tot(AllocatedBasis, tb.AllocatedBytes, ta.AllocatedBytes)
	tot("requested_bytes", tb.RequestedBytes, ta.RequestedBytes)
	tot("active_bytes", tb.ActiveBytes, ta.ActiveBytes)
	tot("inactive_bytes", tb.InactiveBytes, ta.InactiveBytes)
	tot("internal_free_bytes", tb.InternalFreeBytes, ta.InternalFreeBytes)
	tot("external_free_bytes", tb.ExternalFreeBytes, ta.ExternalFreeBytes)
	tot("largest_free_block_bytes", tb.LargestFreeBlockBytes, ta.LargestFreeBlockBytes)
	tot("segments", int64(tb.Segments), int64(ta.Segments))
	tot("blocks", int64(tb.Blocks), int64(ta.Blocks))
	tot(PeakBytesBasis, peakBytes(rb), peakBytes(ra))
	// The highest reserved memory the trace recorded: beside the peak allocated it shows what the cache cost.
	tot("max_reserved_bytes", maxReserved(rb), maxReserved(ra))

	// Each side's rows add up to its own measure (see sideOf). Taking one measure for both sides of a
	// tracer-vs-snapshot diff would leave the tracer's whole category list in a negative residual row.
	sb, sa := sideOf(rb), sideOf(ra)
	basis := sb.basis
	if sa.basis != basis {
		basis = basis + " before, " + sa.basis + " after"
	}
	d.Categories = buildTable(basis, sb.total, sa.total, catRows(sb.categories), catRows(sa.categories), Uncategorized)
	d.Sites = buildTable(basis, sb.total, sa.total, siteRows(rb.Sites, granularity), siteRows(ra.Sites, granularity), OtherSites)
	d.Modules = buildTable(basis, sb.total, sa.total, moduleRows(rb), moduleRows(ra), OtherModules)
	if len(rb.Sites) > 0 && d.Sites.rowBytesMissing() {
		d.Warnings = append(d.Warnings, "the site tables cover only the largest sites of each input; the rest is one "+OtherSites+" row")
	}
	if rb.Peak != nil && ra.Peak != nil {
		pc := buildTable(PeakBytesBasis, rb.Peak.Bytes, ra.Peak.Bytes, catRows(sb.peakCategories), catRows(sa.peakCategories), Uncategorized)
		ps := buildTable(PeakBytesBasis, rb.Peak.Bytes, ra.Peak.Bytes, siteRows(rb.Peak.Sites, granularity), siteRows(ra.Peak.Sites, granularity), OtherSites)
		d.PeakCategories, d.PeakSites = &pc, &ps
		if rb.Peak.Device != ra.Peak.Device {
			d.Warnings = append(d.Warnings, fmt.Sprintf("the peaks are on different devices (%d before, %d after)", rb.Peak.Device, ra.Peak.Device))
		}
	} else if rb.Peak != nil || ra.Peak != nil {
		d.Warnings = append(d.Warnings, "only one input has a trace peak; the peak is not attributed")
	}
	if b.Segments != nil && a.Segments != nil {
		d.Segments = diffSegments(b.Segments, a.Segments)
	}
	d.Findings = diffFindings(rb.Recommendations, ra.Recommendations)
	ob, oa := len(rb.OOMs()), len(ra.OOMs())
	d.OOMs = Delta{Name: "ooms", Before: int64(ob), After: int64(oa), Delta: int64(oa - ob)}
	if rb.Format != ra.Format {
		d.Warnings = append(d.Warnings, fmt.Sprintf("the inputs have different formats (%s, %s)", rb.Format, ra.Format))
	}
	return d
}

// maxReserved is the highest reserved memory a snapshot's trace recorded (its segment events), 0 without one.
func maxReserved(r *report.Report) int64 {
	if s, ok := r.Part.(*report.SnapshotReport); ok && s.AllocatorReplay != nil {
		return s.AllocatorReplay.RecordedPeakReservedBytes
	}
	return 0
}

// peakBytes is the trace peak (a snapshot's or a profiler timeline's), else a tracer file's recorded peak; 0 for
// a log, whose peaks are not a trace.
func peakBytes(r *report.Report) int64 {
	if r.Peak != nil {
		return r.Peak.Bytes
	}
	if t, ok := r.Part.(*report.TracerReport); ok {
		return t.PeakBytes
	}
	return 0
}

type row struct {
	name, category string
	bytes          int64
	count          int
}

// side is what one input's category, site and module rows add up to, by its kind: allocated bytes for a
// snapshot, the listed tensors for tracer JSON (no allocator state), the peak for a profiler timeline (its
// categories are what each held then). Its categories, and those of its peak, are under memscan's names: a
// timeline report written before its categories were renamed still carries torch.profiler's ("Optimizer state").
type side struct {
	basis                      string
	total                      int64
	categories, peakCategories []report.CategoryStat
}

func sideOf(r *report.Report) side {
	s := side{basis: AllocatedBasis, categories: r.Categories}
	if r.Peak != nil {
		s.peakCategories = r.Peak.Categories
	}
	switch p := r.Part.(type) {
	case *report.SnapshotReport:
		s.total = p.AllocatedBytes
	case *report.TracerReport:
		s.basis, s.total = ListedBytesBase, p.ListedBytes
	case *report.TimelineReport:
		s.basis, s.total = PeakBytesBasis, p.MemoryTimeline.PeakBytes
		s.categories = p.MemoryTimeline.CanonicalCategories(s.categories)
		s.peakCategories = p.MemoryTimeline.CanonicalCategories(s.peakCategories)
	}
	return s
}

func catRows(cs []report.CategoryStat) []row {
	out := make([]row, 0, len(cs))
	for _, c := range cs {
		out = append(out, row{name: c.Name, bytes: c.Bytes, count: c.Count})
	}
	return out
}

// siteRows are the sites at granularity (SiteKey); buildTable adds up the lines of one function.
func siteRows(ss []report.SiteStat, granularity string) []row {
	out := make([]row, 0, len(ss))
	for _, s := range ss {
		out = append(out, row{name: SiteKey(s.Site, granularity), category: s.Category, bytes: s.Bytes, count: s.Count})
	}
	return out
}

// moduleRows uses the tracer's merged modules when the report has them, else groups sites by source file.
func moduleRows(r *report.Report) []row {
	if t, ok := r.Part.(*report.TracerReport); ok && len(t.Modules) > 0 {
		out := make([]row, 0, len(t.Modules))
		for _, m := range t.Modules {
			out = append(out, row{name: m.Pattern, bytes: m.Bytes, count: m.Count})
		}
		return out
	}
	byFile := map[string]*row{}
	var order []string
	for _, s := range r.Sites {
		f := SiteFile(s.Site)
		x := byFile[f]
		if x == nil {
			x = &row{name: f}
			byFile[f] = x
			order = append(order, f)
		}
		x.bytes += s.Bytes
		x.count += s.Count
	}
	out := make([]row, 0, len(order))
	for _, f := range order {
		out = append(out, *byFile[f])
	}
	return out
}

// SiteFile returns the file part of a "file:line:function" site (file names may contain ':' themselves, e.g.
// Windows drives, so the last two fields are cut from the right).
func SiteFile(site string) string {
	i := strings.LastIndexByte(site, ':')
	if i < 0 {
		return site
	}
	j := strings.LastIndexByte(site[:i], ':')
	if j < 0 {
		return site
	}
	return site[:j]
}

// buildTable joins two row sets by name (and category for sites), adds a residual row per side for bytes the rows
// do not cover, and orders rows by the size of the change.
func buildTable(basis string, totalBefore, totalAfter int64, before, after []row, residual string) Table {
	t := Table{Basis: basis, Total: Delta{Name: basis, Before: totalBefore, After: totalAfter, Delta: totalAfter - totalBefore}}
	type key struct{ name, cat string }
	idx := map[key]int{}
	get := func(r row) *Delta {
		k := key{r.name, r.category}
		if i, ok := idx[k]; ok {
			return &t.Rows[i]
		}
		idx[k] = len(t.Rows)
		t.Rows = append(t.Rows, Delta{Name: r.name, Category: r.category})
		return &t.Rows[len(t.Rows)-1]
	}
	var sumB, sumA int64
	for _, r := range before {
		x := get(r)
		x.Before += r.bytes
		x.BeforeCount += r.count
		sumB += r.bytes
	}
	for _, r := range after {
		x := get(r)
		x.After += r.bytes
		x.AfterCount += r.count
		sumA += r.bytes
	}
	if sumB != totalBefore || sumA != totalAfter {
		x := get(row{name: residual})
		x.Before += totalBefore - sumB
		x.After += totalAfter - sumA
	}
	for i := range t.Rows {
		t.Rows[i].Delta = t.Rows[i].After - t.Rows[i].Before
	}
	slices.SortStableFunc(t.Rows, func(x, y Delta) int {
		return cmp.Or(cmp.Compare(abs64(y.Delta), abs64(x.Delta)), cmp.Compare(y.After, x.After), strings.Compare(x.Name, y.Name))
	})
	return t
}

// rowBytesMissing reports whether a residual row had to be added.
func (t Table) rowBytesMissing() bool {
	for _, r := range t.Rows {
		if r.Name == OtherSites || r.Name == Uncategorized || r.Name == OtherModules {
			return r.Before != 0 || r.After != 0
		}
	}
	return false
}

// Check verifies that the rows add up to the total on both sides.
func (t Table) Check() error {
	var b, a, d int64
	for _, r := range t.Rows {
		b += r.Before
		a += r.After
		d += r.Delta
	}
	if b != t.Total.Before || a != t.Total.After || d != t.Total.Delta {
		return fmt.Errorf("%s table: rows sum to %d → %d (Δ %d), total is %d → %d (Δ %d)", t.Basis, b, a, d,
			t.Total.Before, t.Total.After, t.Total.Delta)
	}
	return nil
}

func abs64(v int64) int64 {
	if v < 0 {
		return -v
	}
	return v
}

// diffSegments pairs the segments of two snapshots by device and size, in address order within each size: two
// processes place their segments at unrelated addresses, so an address says nothing across runs, while the same
// program makes the same cudaMallocs. What has no partner of its size is new or vanished.
func diffSegments(before, after []SegmentID) *SegmentDiff {
	type key struct {
		dev  int
		size int64
	}
	bySize := func(ss []SegmentID) map[key][]SegmentID {
		m := map[key][]SegmentID{}
		for _, s := range ss {
			k := key{s.Device, s.Size}
			m[k] = append(m[k], s)
		}
		for _, l := range m {
			slices.SortFunc(l, func(x, y SegmentID) int { return cmp.Compare(x.Address, y.Address) })
		}
		return m
	}
	b, a := bySize(before), bySize(after)
	d := &SegmentDiff{New: []SegmentID{}, Vanished: []SegmentID{}}
	for k, la := range a {
		lb := b[k]
		n := min(len(la), len(lb))
		d.Common += n
		for _, s := range la[n:] {
			d.New = append(d.New, s)
			d.NewBytes += s.Size
		}
	}
	for k, lb := range b {
		for _, s := range lb[min(len(lb), len(a[k])):] {
			d.Vanished = append(d.Vanished, s)
			d.VanishedBytes += s.Size
		}
	}
	order := func(x, y SegmentID) int {
		return cmp.Or(cmp.Compare(y.Size, x.Size), cmp.Compare(x.Device, y.Device), cmp.Compare(x.Address, y.Address))
	}
	slices.SortFunc(d.New, order)
	slices.SortFunc(d.Vanished, order)
	return d
}
