package merge

import (
	"cmp"
	"fmt"
	"math"
	"math/bits"
	"slices"
	"strings"

	"github.com/memscan/memscan/findings"
	"github.com/memscan/memscan/internal/units"
	"github.com/memscan/memscan/report"
)

// SummaryKind marks a msgpack file as one rank's summary (as opposed to a whole run's report.msgpack).
const SummaryKind = "memscan-rank-summary"

// SummaryVersion is bumped whenever a RankSummary field changes meaning or is removed.
const SummaryVersion = 1

// RankSummary is the compact summary of one rank's snapshot: what a cross-rank report needs, a few hundred
// bytes, so that thousands of ranks can be summarized where their snapshots live and merged anywhere.
type RankSummary struct {
	Kind    string `json:"kind" msgpack:"kind"`
	Version int    `json:"version" msgpack:"version"`
	File    string `json:"file" msgpack:"file"`
	// Run names the run the snapshot came from (see Summarize): two runs of one iteration have ranks of the same
	// numbers, and the run tells them apart. "" in summaries written before it existed.
	Run       string `json:"run,omitempty" msgpack:"run,omitempty"`
	Rank      int    `json:"rank" msgpack:"rank"`           // -1 when unknown
	Iteration int    `json:"iteration" msgpack:"iteration"` // -1 when unknown
	// Stage is the pipeline stage, -1 when unknown (the merger can derive it from the rank, see Options).
	Stage   int   `json:"stage" msgpack:"stage"`
	Devices []int `json:"devices" msgpack:"devices"`
	// Source is the file the summary was read from (set by ReadFile, not stored in the summary): what to remove
	// when a rank is given twice.
	Source string `json:"-" msgpack:"-"`

	ReservedBytes         int64 `json:"reserved_bytes" msgpack:"reserved_bytes"`
	AllocatedBytes        int64 `json:"allocated_bytes" msgpack:"allocated_bytes"`
	RequestedBytes        int64 `json:"requested_bytes" msgpack:"requested_bytes"`
	InternalFreeBytes     int64 `json:"internal_free_bytes" msgpack:"internal_free_bytes"`
	ExternalFreeBytes     int64 `json:"external_free_bytes" msgpack:"external_free_bytes"`
	LargestFreeBlockBytes int64 `json:"largest_free_block_bytes" msgpack:"largest_free_block_bytes"`
	// PeakBytes is the trace's peak of live allocated bytes, or AllocatedBytes when there is no trace; for a
	// tracer file, profiler timeline or log, the peak it recorded.
	PeakBytes  int64                 `json:"peak_bytes" msgpack:"peak_bytes"`
	OOMs       int                   `json:"ooms" msgpack:"ooms"`
	Categories []report.CategoryStat `json:"categories" msgpack:"categories"`
}

// summaryCategories is how many categories a summary (and a merged report) keeps, largest first; the rule sets
// have far fewer, so the bound only matters for hostile input.
const summaryCategories = 64

// Summarize reduces a report to its rank summary. run names the run its input belongs to: the caller derives it
// from the input's path (input.RunOf of the absolute path: the dump folder with rank and iteration blanked),
// which merge cannot read itself, as it needs only the report model.
func Summarize(r *report.Report, run string) *RankSummary {
	t, _ := r.AllocatorTotals() // zero for the kinds without allocator state
	s := &RankSummary{
		Kind: SummaryKind, Version: SummaryVersion, File: r.File, Run: run, Rank: r.Rank, Iteration: r.Iteration, Stage: -1,
		Devices:               slices.Clone(r.Devices),
		ReservedBytes:         t.ReservedBytes,
		AllocatedBytes:        t.AllocatedBytes,
		RequestedBytes:        t.RequestedBytes,
		InternalFreeBytes:     t.InternalFreeBytes,
		ExternalFreeBytes:     t.ExternalFreeBytes,
		LargestFreeBlockBytes: t.LargestFreeBlockBytes,
		PeakBytes:             t.AllocatedBytes,
		OOMs:                  len(r.OOMs()),
	}
	// The peak the input recorded, as CrossInputs reads it: a tracer file or profiler timeline has no allocator
	// totals, so falling back to AllocatedBytes would summarize its rank as 0 bytes at the peak.
	if p, ok := r.RecordedPeak(); ok {
		s.PeakBytes = p
	}
	cats := slices.Clone(r.Categories)
	slices.SortFunc(cats, func(a, b report.CategoryStat) int {
		return cmp.Or(cmp.Compare(b.Bytes, a.Bytes), cmp.Compare(a.Name, b.Name))
	})
	if len(cats) > summaryCategories {
		cats = cats[:summaryCategories]
	}
	s.Categories = cats
	return s
}

// Options control how summaries are grouped.
type Options struct {
	// Stages and World derive a summary's pipeline stage from its rank when the summary has none: ranks are
	// split into Stages contiguous groups of World/Stages ranks (pipeline parallelism as the outermost mesh
	// dimension, torchtitan's default). Stages zero leaves such summaries without a stage. World zero means the
	// highest rank + 1 among the summaries merged, known only once all are in: such rows get their stage, and
	// count in its statistics, when the result is taken (see Result), so one pass over the summaries suffices.
	Stages, World int
}

// RankRow is one rank in the cross-rank table. It keeps every measure of its summary that a merge sums, so that
// a cross-rank report can be merged again (hierarchically) with the same result as merging the summaries.
type RankRow struct {
	File string `json:"file" msgpack:"file"`
	// Source is the summary file the row was first read from ("" for a summary added in memory).
	Source    string `json:"source,omitempty" msgpack:"source,omitempty"`
	Run       string `json:"run,omitempty" msgpack:"run,omitempty"`
	Rank      int    `json:"rank" msgpack:"rank"`
	Iteration int    `json:"iteration" msgpack:"iteration"`
	// Stage is the stage the merge gave the rank; SummaryStage the one its summary named (−1: none, so Stage came
	// from the rank and --stages, and a later merge derives it again).
	Stage             int     `json:"stage" msgpack:"stage"`
	SummaryStage      int     `json:"summary_stage" msgpack:"summary_stage"`
	ReservedBytes     int64   `json:"reserved_bytes" msgpack:"reserved_bytes"`
	AllocatedBytes    int64   `json:"allocated_bytes" msgpack:"allocated_bytes"`
	RequestedBytes    int64   `json:"requested_bytes" msgpack:"requested_bytes"`
	InternalFreeBytes int64   `json:"internal_free_bytes" msgpack:"internal_free_bytes"`
	ExternalFreeBytes int64   `json:"external_free_bytes" msgpack:"external_free_bytes"`
	PeakBytes         int64   `json:"peak_bytes" msgpack:"peak_bytes"`
	EfficiencyPct     float64 `json:"efficiency_pct" msgpack:"efficiency_pct"`
	OOMs              int     `json:"ooms" msgpack:"ooms"`
}

// summary is the rank summary a row was made from, less its categories (a cross-rank report keeps their sums).
func (r RankRow) summary() *RankSummary {
	return &RankSummary{Kind: SummaryKind, Version: SummaryVersion, File: r.File, Source: r.Source, Run: r.Run, Rank: r.Rank,
		Iteration: r.Iteration, Stage: r.SummaryStage, ReservedBytes: r.ReservedBytes, AllocatedBytes: r.AllocatedBytes,
		RequestedBytes: r.RequestedBytes, InternalFreeBytes: r.InternalFreeBytes, ExternalFreeBytes: r.ExternalFreeBytes,
		PeakBytes: r.PeakBytes, OOMs: r.OOMs}
}

func rowOrder(a, b RankRow) int {
	return cmp.Or(cmp.Compare(a.Iteration, b.Iteration), cmp.Compare(a.Rank, b.Rank), cmp.Compare(a.File, b.File),
		cmp.Compare(a.Source, b.Source), cmp.Compare(a.Run, b.Run))
}

// Merger joins rank summaries into a cross-rank report. It is streaming and associative: Add and Merge in any
// order or grouping give the same Result. Besides one table row per rank it holds only fixed-size state: sums,
// extremes, per-category and per-stage sums. Quantiles and outliers are computed exactly from the
// rows when the result is taken (a row is a few dozen bytes, so a million ranks sort in well under a second).
type Merger struct {
	opts       Options
	rows       []RankRow // one per summary added
	oomRanks   int
	ooms       int
	reserved   stat
	allocated  stat
	requested  stat
	peak       stat
	internal   int64
	external   int64
	categories map[string]*report.CategoryStat
	stages     map[int]*StageStat
	// iterations counts summaries per iteration (−1: unknown); a handful of keys, since a dump holds few steps.
	iterations map[int]int
	// err is the first sum that would have passed what an int64 holds; once set, nothing more is added.
	err *OverflowError
}

// OverflowError reports a byte count whose sum over the ranks would pass what an int64 holds: summaries are
// files anyone can write, and a wrapped sum would print as a plausible wrong or negative total.
type OverflowError struct {
	// File is the summary being added when the sum overflowed ("" when two partial merges were joined).
	File  string
	Field string
}

func (e *OverflowError) Error() string {
	where := "rank summaries"
	if e.File != "" {
		where = e.File
	}
	return fmt.Sprintf("%s: %s: the sum over ranks passes %d bytes; the summaries are corrupt or made up", where, e.Field, int64(math.MaxInt64))
}

// Err returns the overflow that stopped the merge, or nil. With deferred stages (see Options) it also forms the
// stage sums that wait for the world, which takes a pass over the rows; check it once, before Result.
func (m *Merger) Err() error {
	if m.err != nil {
		return m.err
	}
	if m.opts.deferredStages() {
		if _, err := m.stageStats(m.settledStage()); err != nil {
			return err
		}
	}
	return nil
}

// addTo adds v to *dst and reports false, leaving *dst alone, when the sum would overflow.
func addTo(dst *int64, v int64) bool {
	if v > 0 && *dst > math.MaxInt64-v || v < 0 && *dst < math.MinInt64-v {
		return false
	}
	*dst += v
	return true
}

// New returns an empty merger.
func New(opts Options) *Merger {
	return &Merger{opts: opts, categories: map[string]*report.CategoryStat{}, stages: map[int]*StageStat{}, iterations: map[int]int{}}
}

// stat accumulates one metric over ranks.
type stat struct {
	Sum      int64
	Min, Max int64
	MinRow   RankRow
	MaxRow   RankRow
	N        int
}

func (s *stat) add(v int64, row RankRow) bool {
	if !addTo(&s.Sum, v) {
		return false
	}
	if s.N == 0 || v < s.Min || v == s.Min && rowOrder(row, s.MinRow) < 0 {
		s.Min, s.MinRow = v, row
	}
	if s.N == 0 || v > s.Max || v == s.Max && rowOrder(row, s.MaxRow) < 0 {
		s.Max, s.MaxRow = v, row
	}
	s.N++
	return true
}

func (s *stat) merge(o *stat) bool {
	if o.N == 0 {
		return true
	}
	if !addTo(&s.Sum, o.Sum) {
		return false
	}
	if s.N == 0 || o.Min < s.Min || o.Min == s.Min && rowOrder(o.MinRow, s.MinRow) < 0 {
		s.Min, s.MinRow = o.Min, o.MinRow
	}
	if s.N == 0 || o.Max > s.Max || o.Max == s.Max && rowOrder(o.MaxRow, s.MaxRow) < 0 {
		s.Max, s.MaxRow = o.Max, o.MaxRow
	}
	s.N += o.N
	return true
}

// StageStat aggregates the ranks of one pipeline stage.
type StageStat struct {
	Stage          int   `json:"stage" msgpack:"stage"`
	Ranks          int   `json:"ranks" msgpack:"ranks"`
	ReservedBytes  int64 `json:"reserved_bytes" msgpack:"reserved_bytes"` // sum over the stage's ranks
	AllocatedBytes int64 `json:"allocated_bytes" msgpack:"allocated_bytes"`
	MaxReserved    int64 `json:"max_reserved_bytes" msgpack:"max_reserved_bytes"`
	MinReserved    int64 `json:"min_reserved_bytes" msgpack:"min_reserved_bytes"`
	MaxPeak        int64 `json:"max_peak_bytes" msgpack:"max_peak_bytes"`
	// MeanReserved is ReservedBytes / Ranks.
	MeanReserved int64 `json:"mean_reserved_bytes" msgpack:"mean_reserved_bytes"`
	OOMs         int   `json:"ooms" msgpack:"ooms"`
}

// stageOf is the stage of s as it is added: its own, the one its rank falls in when the world is given, or −1
// (none yet, or none at all).
func (m *Merger) stageOf(s *RankSummary) int {
	if s.Stage >= 0 {
		return s.Stage
	}
	if m.opts.Stages > 0 && m.opts.World > 0 && s.Rank >= 0 {
		return rankStage(s.Rank, m.opts.Stages, m.opts.World)
	}
	return -1
}

// rankStage is the stage of rank when world ranks are split into stages contiguous groups of ⌈world/stages⌉.
// Ranks and worlds are bounded (maxRank), and a world of no rank has no stages: 0, never a division by zero.
func rankStage(rank, stages, world int) int {
	per := world / stages
	if world%stages != 0 {
		per++
	}
	if per <= 0 || rank < 0 {
		return 0
	}
	return min(rank/per, stages-1)
}

// deferredStages reports whether rows without a stage of their own get one from the world derived in Result.
func (o Options) deferredStages() bool { return o.Stages > 0 && o.World == 0 }

// deferred reports whether row waits for the derived world for its stage (see Options).
func (m *Merger) deferred(row RankRow) bool {
	return m.opts.deferredStages() && row.Stage < 0 && row.Rank >= 0
}

// settledStage returns the final stage of a row: the one it was added with, or for a deferred row the one its
// rank falls in now that every rank merged is known (world = highest rank + 1, as the rows are all kept).
func (m *Merger) settledStage() func(RankRow) int {
	if !m.opts.deferredStages() {
		return func(r RankRow) int { return r.Stage }
	}
	world := m.derivedWorld()
	return func(r RankRow) int {
		if m.deferred(r) {
			return rankStage(r.Rank, m.opts.Stages, world)
		}
		return r.Stage
	}
}

// derivedWorld is the highest rank merged + 1 (ranks are validated, so it fits), 0 when no row names a rank.
func (m *Merger) derivedWorld() int {
	world := 0
	for _, r := range m.rows {
		world = max(world, r.Rank+1)
	}
	return world
}

// wide is an int128 sum of int64s: the deferred stage sums are formed in whatever order the rows were merged,
// and the true sum is what must fit an int64, not every partial one (with negative counts in hostile files, a
// partial sum can pass the bound in one order and not in another, which would break associativity).
type wide struct {
	hi int64
	lo uint64
}

func (w *wide) add(v int64) {
	lo, carry := bits.Add64(w.lo, uint64(v), 0)
	w.hi += int64(carry) + v>>63 // v>>63 is v's sign extension into the high word: 0 or −1
	w.lo = lo
}

// int64 returns the sum and whether it fits an int64.
func (w wide) int64() (int64, bool) {
	v := int64(w.lo)
	return v, w.hi == v>>63
}

// stageStats returns the per-stage statistics sorted by stage, the deferred rows (see Options) counted in the
// stage stageOf gives them. Their byte sums are formed here, so they are checked here: err names the first
// stage and field whose sum passes what an int64 holds.
func (m *Merger) stageStats(stageOf func(RankRow) int) ([]StageStat, *OverflowError) {
	type sums struct {
		StageStat
		reserved, allocated wide
	}
	all := map[int]*sums{}
	get := func(i int) *sums {
		st := all[i]
		if st == nil {
			st = &sums{StageStat: StageStat{Stage: i}}
			all[i] = st
		}
		return st
	}
	for i, st := range m.stages {
		s := &sums{StageStat: *st}
		s.reserved.add(st.ReservedBytes)
		s.allocated.add(st.AllocatedBytes)
		all[i] = s
	}
	if m.opts.deferredStages() {
		for _, r := range m.rows {
			if !m.deferred(r) {
				continue
			}
			s := get(stageOf(r))
			s.add(StageStat{Ranks: 1, MaxReserved: r.ReservedBytes, MinReserved: r.ReservedBytes, MaxPeak: r.PeakBytes, OOMs: r.OOMs})
			s.reserved.add(r.ReservedBytes)
			s.allocated.add(r.AllocatedBytes)
		}
	}
	out := make([]StageStat, 0, len(all))
	for _, s := range all {
		out = append(out, s.StageStat)
	}
	slices.SortFunc(out, func(a, b StageStat) int { return cmp.Compare(a.Stage, b.Stage) })
	for i := range out {
		s := all[out[i].Stage]
		var ok bool
		if out[i].ReservedBytes, ok = s.reserved.int64(); !ok {
			return nil, &OverflowError{Field: stageField(out[i].Stage, "reserved_bytes")}
		}
		if out[i].AllocatedBytes, ok = s.allocated.int64(); !ok {
			return nil, &OverflowError{Field: stageField(out[i].Stage, "allocated_bytes")}
		}
		if out[i].Ranks > 0 {
			out[i].MeanReserved = out[i].ReservedBytes / int64(out[i].Ranks)
		}
	}
	return out, nil
}

// stageField names a stage's byte sum as the cross-rank report's JSON does.
func stageField(stage int, field string) string { return fmt.Sprintf("stages[%d].%s", stage, field) }

// Add merges one rank summary, which the caller has validated (Check; ReadFile and DecodeSummaries return only
// valid ones). A byte count whose sum over the ranks would overflow stops the merge (see Err).
func (m *Merger) Add(s *RankSummary) {
	if m.err != nil {
		return
	}
	if field := m.checkAdd(s); field != "" {
		m.err = &OverflowError{File: s.File, Field: field}
		return
	}
	row := RankRow{File: s.File, Source: s.Source, Run: s.Run, Rank: s.Rank, Iteration: s.Iteration, Stage: m.stageOf(s), SummaryStage: s.Stage,
		ReservedBytes: s.ReservedBytes, AllocatedBytes: s.AllocatedBytes, RequestedBytes: s.RequestedBytes,
		InternalFreeBytes: s.InternalFreeBytes, ExternalFreeBytes: s.ExternalFreeBytes, PeakBytes: s.PeakBytes, OOMs: s.OOMs}
	if s.ReservedBytes > 0 {
		row.EfficiencyPct = float64(s.RequestedBytes) / float64(s.ReservedBytes) * 100
	}
	m.rows = append(m.rows, row)
	m.iterations[s.Iteration]++
	m.ooms += s.OOMs
	if s.OOMs > 0 {
		m.oomRanks++
	}
	m.reserved.add(s.ReservedBytes, row)
	m.allocated.add(s.AllocatedBytes, row)
	m.requested.add(s.RequestedBytes, row)
	m.peak.add(s.PeakBytes, row)
	addTo(&m.internal, s.InternalFreeBytes)
	addTo(&m.external, s.ExternalFreeBytes)
	for _, c := range s.Categories {
		m.addCategory(c)
	}
	if row.Stage >= 0 {
		st := m.stage(row.Stage)
		st.add(StageStat{Stage: row.Stage, Ranks: 1, ReservedBytes: row.ReservedBytes, AllocatedBytes: row.AllocatedBytes,
			MaxReserved: row.ReservedBytes, MinReserved: row.ReservedBytes, MaxPeak: row.PeakBytes, OOMs: row.OOMs})
	}
}

// checkAdd returns the field of s whose addition would overflow a sum over the ranks, or "", before anything is
// added, so that a refused summary leaves the merger as it was.
func (m *Merger) checkAdd(s *RankSummary) string {
	fits := func(sum, v int64) bool { return addTo(&sum, v) }
	for _, f := range []struct {
		name   string
		sum, v int64
	}{{"reserved_bytes", m.reserved.Sum, s.ReservedBytes}, {"allocated_bytes", m.allocated.Sum, s.AllocatedBytes},
		{"requested_bytes", m.requested.Sum, s.RequestedBytes}, {"peak_bytes", m.peak.Sum, s.PeakBytes},
		{"internal_free_bytes", m.internal, s.InternalFreeBytes}, {"external_free_bytes", m.external, s.ExternalFreeBytes}} {
		if !fits(f.sum, f.v) {
			return f.name
		}
	}
	if i := m.stageOf(s); m.stages[i] != nil {
		if !fits(m.stages[i].ReservedBytes, s.ReservedBytes) {
			return stageField(i, "reserved_bytes")
		}
		if !fits(m.stages[i].AllocatedBytes, s.AllocatedBytes) {
			return stageField(i, "allocated_bytes")
		}
	}
	return m.checkCategories(s.Categories)
}

// checkCategories returns the first category whose byte or allocation count, summed over the ranks with cats
// added, would pass what an int64 holds, or "".
func (m *Merger) checkCategories(cats []report.CategoryStat) string {
	type sums struct{ bytes, count int64 }
	seen := map[string]*sums{} // a list may name a category twice
	for _, c := range cats {
		sum := seen[c.Name]
		if sum == nil {
			sum = &sums{}
			if cs := m.categories[c.Name]; cs != nil {
				sum.bytes, sum.count = cs.Bytes, int64(cs.Count)
			}
			seen[c.Name] = sum
		}
		if !addTo(&sum.bytes, c.Bytes) {
			return "categories[" + c.Name + "].bytes"
		}
		if !addTo(&sum.count, int64(c.Count)) {
			return "categories[" + c.Name + "].count"
		}
	}
	return ""
}

// AddCategories adds the category sums of a cross-rank report merged again: its rows come in through Add
// without categories, and the report's sums over them through here, once.
func (m *Merger) AddCategories(file string, cats []report.CategoryStat) {
	if m.err != nil {
		return
	}
	if field := m.checkCategories(cats); field != "" {
		m.err = &OverflowError{File: file, Field: field}
		return
	}
	for _, c := range cats {
		m.addCategory(c)
	}
}

// addCategory adds c's bytes and count to the category of its name.
func (m *Merger) addCategory(c report.CategoryStat) {
	cs := m.categories[c.Name]
	if cs == nil {
		cs = &report.CategoryStat{Name: c.Name}
		m.categories[c.Name] = cs
	}
	cs.Bytes += c.Bytes
	cs.Count += c.Count
}

func (m *Merger) stage(i int) *StageStat {
	st := m.stages[i]
	if st == nil {
		st = &StageStat{Stage: i}
		m.stages[i] = st
	}
	return st
}

func (st *StageStat) add(o StageStat) {
	if st.Ranks == 0 || o.MaxReserved > st.MaxReserved {
		st.MaxReserved = o.MaxReserved
	}
	if st.Ranks == 0 || o.MinReserved < st.MinReserved {
		st.MinReserved = o.MinReserved
	}
	st.MaxPeak = max(st.MaxPeak, o.MaxPeak)
	st.Ranks += o.Ranks
	st.ReservedBytes += o.ReservedBytes
	st.AllocatedBytes += o.AllocatedBytes
	st.OOMs += o.OOMs
}

// Merge folds another merger (built with the same options) into m. Sums that would overflow stop the merge (see
// Err), as an overflow in o does.
func (m *Merger) Merge(o *Merger) {
	if m.err != nil {
		return
	}
	if o.err != nil {
		m.err = o.err
		return
	}
	if field := m.checkMerge(o); field != "" {
		m.err = &OverflowError{Field: field}
		return
	}
	m.rows = append(m.rows, o.rows...)
	for it, n := range o.iterations {
		m.iterations[it] += n
	}
	m.ooms += o.ooms
	m.oomRanks += o.oomRanks
	m.reserved.merge(&o.reserved)
	m.allocated.merge(&o.allocated)
	m.requested.merge(&o.requested)
	m.peak.merge(&o.peak)
	addTo(&m.internal, o.internal)
	addTo(&m.external, o.external)
	for _, c := range o.categories {
		m.addCategory(*c)
	}
	for i, st := range o.stages {
		m.stage(i).add(*st)
	}
}

// checkMerge is checkAdd for a whole merger.
func (m *Merger) checkMerge(o *Merger) string {
	fits := func(sum, v int64) bool { return addTo(&sum, v) }
	for _, f := range []struct {
		name   string
		sum, v int64
	}{{"reserved_bytes", m.reserved.Sum, o.reserved.Sum}, {"allocated_bytes", m.allocated.Sum, o.allocated.Sum},
		{"requested_bytes", m.requested.Sum, o.requested.Sum}, {"peak_bytes", m.peak.Sum, o.peak.Sum},
		{"internal_free_bytes", m.internal, o.internal}, {"external_free_bytes", m.external, o.external}} {
		if !fits(f.sum, f.v) {
			return f.name
		}
	}
	for i, st := range o.stages {
		if mst := m.stages[i]; mst != nil {
			if !fits(mst.ReservedBytes, st.ReservedBytes) {
				return stageField(i, "reserved_bytes")
			}
			if !fits(mst.AllocatedBytes, st.AllocatedBytes) {
				return stageField(i, "allocated_bytes")
			}
		}
	}
	for name, c := range o.categories {
		if mc := m.categories[name]; mc != nil {
			if !fits(mc.Bytes, c.Bytes) {
				return "categories[" + name + "].bytes"
			}
			if !fits(int64(mc.Count), int64(c.Count)) {
				return "categories[" + name + "].count"
			}
		}
	}
	return ""
}

// CrossRank is the merged cross-rank report. Every field is a function of the rows, the category sums and the
// options, so a cross-rank report read back as an input (its rows and categories) merges to the same report as
// the summaries it came from.
type CrossRank struct {
	Kind    string `json:"kind" msgpack:"kind"`
	Version int    `json:"version" msgpack:"version"`
	// Ranks counts the summaries merged (rows); RankSet says how many distinct ranks they are.
	Ranks int `json:"ranks" msgpack:"ranks"`
	// Rows is the per-rank table, sorted by iteration, rank and file.
	Rows      []RankRow   `json:"rows" msgpack:"rows"`
	Reserved  MetricStats `json:"reserved" msgpack:"reserved"`
	Allocated MetricStats `json:"allocated" msgpack:"allocated"`
	Peak      MetricStats `json:"peak" msgpack:"peak"`
	// ImbalancePct is (max / median − 1) × 100 of reserved bytes; PeakImbalancePct the same for peaks.
	ImbalancePct     float64 `json:"imbalance_pct" msgpack:"imbalance_pct"`
	PeakImbalancePct float64 `json:"peak_imbalance_pct" msgpack:"peak_imbalance_pct"`
	// EfficiencyPct is requested / reserved over all ranks.
	EfficiencyPct     float64 `json:"efficiency_pct" msgpack:"efficiency_pct"`
	InternalFreeBytes int64   `json:"internal_free_bytes" msgpack:"internal_free_bytes"`
	ExternalFreeBytes int64   `json:"external_free_bytes" msgpack:"external_free_bytes"`
	// Outliers are all the ranks reserving more than findings.OutlierPct above the median of their group (their
	// iteration and pipeline stage), the largest gap first; PeakOutliers the same by peak.
	Outliers     []Outlier   `json:"outliers" msgpack:"outliers"`
	PeakOutliers []Outlier   `json:"peak_outliers" msgpack:"peak_outliers"`
	Stages       []StageStat `json:"stages" msgpack:"stages"`
	// Categories are the live bytes and allocations of every category summed over the ranks, largest first
	// (TopCategories folds the tail for display).
	Categories      []report.CategoryStat `json:"categories" msgpack:"categories"`
	OOMs            int                   `json:"ooms" msgpack:"ooms"`
	OOMRanks        int                   `json:"oom_ranks" msgpack:"oom_ranks"`
	RankSet         RankSet               `json:"rank_set" msgpack:"rank_set"`
	Recommendations []findings.Finding    `json:"recommendations" msgpack:"recommendations"`
	// Iterations lists the iterations (−1: unknown) when the summaries come from more than one: then a rank
	// appears once per iteration, Ranks counts summaries, and the statistics mix steps.
	Iterations []int `json:"iterations,omitempty" msgpack:"iterations,omitempty"`
}

// CrossRankKind marks a msgpack or JSON file as a merged cross-rank report.
const CrossRankKind = "memscan-cross-rank"

// CrossRankVersion is bumped whenever a CrossRank field changes meaning or is removed. Version 2 keeps in each
// row every measure a merge sums, so a cross-rank report is an input of memscan merge; version 1 did not.
const CrossRankVersion = 2

// MetricStats summarizes one metric over ranks. Median, P90 and P99 are exact percentiles by the rule of
// units.PercentileIndex (one of the values), so Min ≤ Median ≤ P90 ≤ P99 ≤ Max.
type MetricStats struct {
	Sum     int64 `json:"sum" msgpack:"sum"`
	Min     int64 `json:"min" msgpack:"min"`
	MinRank int   `json:"min_rank" msgpack:"min_rank"`
	Max     int64 `json:"max" msgpack:"max"`
	MaxRank int   `json:"max_rank" msgpack:"max_rank"`
	Mean    int64 `json:"mean" msgpack:"mean"`
	Median  int64 `json:"median" msgpack:"median"`
	P90     int64 `json:"p90" msgpack:"p90"`
	P99     int64 `json:"p99" msgpack:"p99"`
}

// stats summarizes s; values are the metric of every row merged (in any order), for the exact percentiles.
func (s *stat) stats(values []int64) MetricStats {
	if s.N == 0 {
		return MetricStats{MinRank: -1, MaxRank: -1}
	}
	slices.Sort(values)
	return MetricStats{Sum: s.Sum, Min: s.Min, MinRank: s.MinRow.Rank, Max: s.Max, MaxRank: s.MaxRow.Rank,
		Mean: s.Sum / int64(s.N), Median: units.PercentileSorted(values, 50), P90: units.PercentileSorted(values, 90),
		P99: units.PercentileSorted(values, 99)}
}

// column returns one metric of every row.
func column(rows []RankRow, metric func(RankRow) int64) []int64 {
	out := make([]int64, len(rows))
	for i, r := range rows {
		out[i] = metric(r)
	}
	return out
}

func reservedOf(r RankRow) int64 { return r.ReservedBytes }
func peakOf(r RankRow) int64     { return r.PeakBytes }

// imbalancePct is (max / median − 1) × 100: how far the largest rank is above the typical one. The median is
// one of the values, so it is never negative; 0 when the median is 0 (nothing to compare with).
func imbalancePct(s MetricStats) float64 {
	if s.Median <= 0 {
		return 0
	}
	return max(0, (float64(s.Max)/float64(s.Median)-1)*100)
}

// Result returns the cross-rank report of everything merged so far. It does not change m. Deferred rows (see
// Options) get their stage here, in the table, the outliers and the per-stage view; Err says whether their
// stage sums fit, and Result is only meaningful when Err is nil.
func (m *Merger) Result() *CrossRank {
	stageOf := m.settledStage()
	c := &CrossRank{Kind: CrossRankKind, Version: CrossRankVersion, Ranks: len(m.rows), Rows: slices.Clone(m.rows),
		Reserved:          m.reserved.stats(column(m.rows, reservedOf)),
		Allocated:         m.allocated.stats(column(m.rows, func(r RankRow) int64 { return r.AllocatedBytes })),
		Peak:              m.peak.stats(column(m.rows, peakOf)),
		InternalFreeBytes: m.internal, ExternalFreeBytes: m.external, OOMs: m.ooms, OOMRanks: m.oomRanks,
		Stages: []StageStat{}, Categories: []report.CategoryStat{}}
	for i := range c.Rows {
		c.Rows[i].Stage = stageOf(c.Rows[i])
	}
	slices.SortStableFunc(c.Rows, rowOrder)
	if len(m.iterations) > 1 {
		for it := range m.iterations {
			c.Iterations = append(c.Iterations, it)
		}
		slices.Sort(c.Iterations)
	}
	if c.Rows == nil {
		c.Rows = []RankRow{}
	}
	c.ImbalancePct, c.PeakImbalancePct = imbalancePct(c.Reserved), imbalancePct(c.Peak)
	if m.reserved.Sum > 0 {
		c.EfficiencyPct = float64(m.requested.Sum) / float64(m.reserved.Sum) * 100
	}
	c.Outliers, c.PeakOutliers = outliers(c.Rows, reservedOf), outliers(c.Rows, peakOf)
	if stages, err := m.stageStats(stageOf); err == nil {
		c.Stages = stages
	}
	for _, cs := range m.categories {
		c.Categories = append(c.Categories, *cs)
	}
	slices.SortFunc(c.Categories, func(a, b report.CategoryStat) int {
		return cmp.Or(cmp.Compare(b.Bytes, a.Bytes), cmp.Compare(a.Name, b.Name))
	})
	c.RankSet = checkRankSet(c.Rows, m.opts)
	c.Recommendations = crossRankAdvice(c, m.opts)
	return c
}

// TopCategories returns the n largest categories, the rest summed as "(other categories)" in the last place
// when there are more than n.
func TopCategories(cats []report.CategoryStat, n int) []report.CategoryStat {
	if n <= 0 || len(cats) <= n {
		return cats
	}
	out := slices.Clone(cats[:n-1])
	rest := report.CategoryStat{Name: "(other categories)"}
	for _, cs := range cats[n-1:] {
		rest.Bytes += cs.Bytes
		rest.Count += cs.Count
	}
	return append(out, rest)
}

// crossRankAdvice turns the merged numbers into advice.
func crossRankAdvice(c *CrossRank, opts Options) []findings.Finding {
	out := []findings.Finding{}
	if len(c.Iterations) > findings.MixedIterationsMax {
		out = append(out, findings.NewMixedIterations(c.Ranks, len(c.Iterations), IterationList(c.Iterations), UnknownIterationHint(c.Iterations)))
	}
	out = append(out, c.RankSet.findings(opts)...)
	if c.Ranks >= 2 && c.ImbalancePct > findings.OutlierPct {
		out = append(out, findings.NewRanksImbalance(rankName(c.Reserved.MaxRank), c.Reserved.Max, c.ImbalancePct, c.Reserved.Median, c.Ranks))
	}
	if len(c.Stages) >= 2 {
		first, last := c.Stages[0], c.Stages[len(c.Stages)-1]
		if last.MeanReserved > 0 && float64(first.MeanReserved)/float64(last.MeanReserved) > findings.PipelineStageSkewRatio {
			out = append(out, findings.NewPipelineStageSkew(first.Stage, first.MeanReserved, last.Stage, last.MeanReserved))
		}
	}
	if c.OOMRanks > findings.RankOOMMin {
		out = append(out, findings.NewRankOOM(c.OOMs, c.OOMRanks, c.Ranks))
	}
	return out
}

// rankName is "rank N", or what to call a rank whose summary's path named none (−1).
func rankName(rank int) string {
	if rank < 0 {
		return "the largest rank (its path names no rank number)"
	}
	return fmt.Sprintf("rank %d", rank)
}

// IterationList renders iterations as "10, 20, 30" (−1, a summary whose path named none, as "unknown").
func IterationList(v []int) string {
	parts := make([]string, len(v))
	for i, x := range v {
		parts[i] = fmt.Sprint(x)
		if x < 0 {
			parts[i] = "unknown"
		}
	}
	return strings.Join(parts, ", ")
}

// UnknownIterationHint names --iteration none when some summaries do not know their iteration (−1).
func UnknownIterationHint(iterations []int) string {
	if slices.Contains(iterations, -1) {
		return " (none: iteration unknown)"
	}
	return ""
}
