package analyze

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/memscan/memscan/findings"
	"github.com/memscan/memscan/internal/categorize"
	"github.com/memscan/memscan/internal/units"
	"github.com/memscan/memscan/load"
	"github.com/memscan/memscan/report"
	"github.com/memscan/memscan/snapshot"
	"github.com/memscan/memscan/tracer"
)

// RuntimeOptions configure the analysis of tracer JSON, memory timelines and training logs.
type RuntimeOptions struct {
	// Top bounds the largest-tensor, site and stack tables (default 20).
	Top int
	// Rules categorize tracer tensors by their creation stack; nil uses categorize.Default().
	Rules *categorize.Rules
}

func (o RuntimeOptions) top() int {
	if o.Top <= 0 {
		return 20
	}
	return o.Top
}

// ModulePattern replaces every dot-separated path component made only of digits with "*":
// "decoder.layers.3.mlp.experts.local_experts.17.linear_fc1" → "decoder.layers.*.mlp.experts.local_experts.*.linear_fc1".
// An empty path or "Unknown" is UnknownModule.
func ModulePattern(module string) string {
	if module == "" || module == report.UnknownModule {
		return report.UnknownModule
	}
	parts := strings.Split(module, ".")
	for i, p := range parts {
		if isAllDigits(p) {
			parts[i] = "*"
		}
	}
	return strings.Join(parts, ".")
}

func isAllDigits(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// AnalyzeTracer analyzes a decoded tracer peak snapshot (in.Tracer) into a Report with format "tracer-json".
func AnalyzeTracer(ctx context.Context, in *load.Input, opts RuntimeOptions) (*report.Report, error) {
	if in == nil || in.Tracer == nil {
		return nil, errors.New("analyze tracer: input has no tracer data")
	}
	tr := in.Tracer
	if err := checkTracerSizes(tr); err != nil {
		return nil, fmt.Errorf("analyze %s: %w", in.Path, err)
	}
	r := &report.Report{Header: report.Header{File: in.Path, Format: in.Format, Rank: tr.Rank, Iteration: -1, Devices: []int{},
		Categories: []report.CategoryStat{}, Top: []report.Allocation{}, Recommendations: []findings.Finding{}, Warnings: []string{}}}
	if r.Format == "" {
		r.Format = tracer.Format
	}
	view := &report.TracerView{Rank: tr.Rank, Devices: []report.TracerDeviceView{}}
	cz := categorize.NewCategorizer(opts.Rules)
	var primaryPeak int64 = -1
	for i := range tr.Devices {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		d := &tr.Devices[i]
		if d.IsCUDA() {
			if o := d.Ordinal(); o >= 0 && !slices.Contains(r.Devices, o) {
				r.Devices = append(r.Devices, o)
			}
		}
		dv := analyzeTracerDevice(d, cz, opts.top())
		view.Devices = append(view.Devices, dv)
		// The primary device is the CUDA device with the highest peak; a file without CUDA falls back to its first.
		if d.IsCUDA() && d.PeakBytes > primaryPeak {
			primaryPeak, view.Device = d.PeakBytes, d.Name
		}
		if dv.GapBytes < 0 {
			r.Warnings = append(r.Warnings, fmt.Sprintf("%s: the listed tensors (%d bytes) exceed peak_memory_mb (%d bytes); the file is inconsistent", d.Name, dv.ListedBytes, dv.PeakBytes))
		}
	}
	slices.Sort(r.Devices)
	if view.Device == "" && len(view.Devices) > 0 {
		view.Device = view.Devices[0].Device
	}
	part := &report.TracerReport{Tracer: view}
	r.Part = part
	if p := view.Primary(); p != nil {
		part.PeakBytes, part.ListedBytes = p.PeakBytes, p.ListedBytes
		part.Phases, part.Modules = p.Phases, p.Modules
		r.Categories = p.Categories
		r.Sites = make([]report.SiteStat, 0, len(p.Sites))
		for _, s := range p.Sites {
			r.Sites = append(r.Sites, report.SiteStat{Site: s.Site, Category: s.Category, Bytes: s.Bytes, Count: s.Count})
		}
		for _, t := range p.Top {
			r.Top = append(r.Top, report.Allocation{Size: t.Bytes, RequestedSize: t.Bytes, Device: tracerOrdinal(p.Device), State: "live at peak", Category: t.Category, Site: t.Site, Rule: t.Rule})
		}
		r.Recommendations = tracerRecommendations(p)
	}
	if len(view.Devices) == 0 {
		r.Warnings = append(r.Warnings, "the tracer file lists no device")
	}
	return r, nil
}

func tracerOrdinal(name string) int {
	d := tracer.Device{Name: name}
	return d.Ordinal()
}

// tensorFacts are the per-tensor derived values shared by every view.
type tensorFacts struct {
	pattern  string
	category string
	rule     string
	site     string
	code     string
}

func analyzeTracerDevice(d *tracer.Device, cz *categorize.Categorizer, top int) report.TracerDeviceView {
	dv := report.TracerDeviceView{Device: d.Name, PeakBytes: d.PeakBytes, Tensors: len(d.Tensors),
		Phases: []report.PhaseStat{}, Modules: []report.ModuleStat{}, ModuleTree: []report.ModuleNode{}, Categories: []report.CategoryStat{},
		Sites: []report.TracerSite{}, Stacks: []report.TracerStackGroup{}, Top: []report.TracerTensorRow{}}
	userStacks := map[*tracer.Stack]*snapshot.Stack{}
	facts := make([]tensorFacts, len(d.Tensors))
	for i := range d.Tensors {
		t := &d.Tensors[i]
		dv.ListedBytes += t.SizeBytes
		if i == 0 || t.SizeBytes < dv.SmallestListedBytes {
			dv.SmallestListedBytes = t.SizeBytes
		}
		if t.Release != nil {
			dv.ReleasedTensors++
		}
		f := &facts[i]
		f.pattern = ModulePattern(t.Module)
		f.site, f.code = tracerSite(t.Create)
		f.category, f.rule = tracerCategory(t, userStack(userStacks, t.Create), cz)
	}
	dv.GapBytes = dv.PeakBytes - dv.ListedBytes
	if len(d.Tensors) > 0 {
		dv.InferredMinMemoryMB = int(dv.SmallestListedBytes >> 20)
	}
	dv.GapExplanation = gapExplanation(&dv)

	addPhases(&dv, d)
	// Merged module patterns and the hierarchy.
	dv.Modules, dv.ModuleTree = moduleViews(d, facts, dv.ListedBytes)

	addCategories(&dv, d, facts)
	addSitesAndStacks(&dv, d, facts, top)
	addTopTensors(&dv, d, facts, top)
	return dv
}

// addPhases adds the bytes per tracer phase, in order of bytes.
func addPhases(v *report.TracerDeviceView, d *tracer.Device) {
	phaseIdx := map[string]int{}
	for i := range d.Tensors {
		t := &d.Tensors[i]
		j, ok := phaseIdx[t.Phase]
		if !ok {
			j = len(v.Phases)
			phaseIdx[t.Phase] = j
			v.Phases = append(v.Phases, report.PhaseStat{Name: t.Phase})
		}
		v.Phases[j].Bytes += t.SizeBytes
		v.Phases[j].Count++
	}
	slices.SortStableFunc(v.Phases, func(a, b report.PhaseStat) int {
		return cmp.Or(cmp.Compare(b.Bytes, a.Bytes), strings.Compare(a.Name, b.Name))
	})
	for i := range v.Phases {
		v.Phases[i].SharePct = units.Share(v.Phases[i].Bytes, v.ListedBytes)
	}
}

// addCategories adds the bytes per category, in order of bytes.
func addCategories(v *report.TracerDeviceView, d *tracer.Device, facts []tensorFacts) {
	catIdx := map[string]int{}
	for i := range d.Tensors {
		c := facts[i].category
		j, ok := catIdx[c]
		if !ok {
			j = len(v.Categories)
			catIdx[c] = j
			v.Categories = append(v.Categories, report.CategoryStat{Name: c})
		}
		v.Categories[j].Bytes += d.Tensors[i].SizeBytes
		v.Categories[j].Count++
	}
	slices.SortStableFunc(v.Categories, func(a, b report.CategoryStat) int {
		return cmp.Or(cmp.Compare(b.Bytes, a.Bytes), strings.Compare(a.Name, b.Name))
	})
}

// addSitesAndStacks adds the top creation sites and whole creation stacks, in order of bytes.
func addSitesAndStacks(v *report.TracerDeviceView, d *tracer.Device, facts []tensorFacts, top int) {
	siteIdx := map[string]int{}
	stackIdx := map[*tracer.Stack]int{}
	var stackKeys []*tracer.Stack
	for i := range d.Tensors {
		t, f := &d.Tensors[i], &facts[i]
		j, ok := siteIdx[f.site]
		if !ok {
			j = len(v.Sites)
			siteIdx[f.site] = j
			v.Sites = append(v.Sites, report.TracerSite{Site: f.site, Code: f.code, Category: f.category, Phases: []string{}})
		}
		s := &v.Sites[j]
		s.Bytes += t.SizeBytes
		s.Count++
		if !slices.Contains(s.Phases, t.Phase) {
			s.Phases = append(s.Phases, t.Phase)
		}
		k, ok := stackIdx[t.Create]
		if !ok {
			k = len(v.Stacks)
			stackIdx[t.Create] = k
			stackKeys = append(stackKeys, t.Create)
			v.Stacks = append(v.Stacks, report.TracerStackGroup{Frames: userFrameStrings(t.Create)})
		}
		v.Stacks[k].Bytes += t.SizeBytes
		v.Stacks[k].Count++
	}
	for i := range v.Sites {
		slices.Sort(v.Sites[i].Phases)
	}
	slices.SortStableFunc(v.Sites, func(a, b report.TracerSite) int {
		return cmp.Or(cmp.Compare(b.Bytes, a.Bytes), strings.Compare(a.Site, b.Site))
	})
	slices.SortStableFunc(v.Stacks, func(a, b report.TracerStackGroup) int {
		return cmp.Or(cmp.Compare(b.Bytes, a.Bytes), strings.Compare(strings.Join(a.Frames, "\n"), strings.Join(b.Frames, "\n")))
	})
	v.Sites = v.Sites[:min(len(v.Sites), top)]
	v.Stacks = v.Stacks[:min(len(v.Stacks), top)]
}

// addTopTensors adds the largest tensors: stable by size so equal sizes keep the file's (creation) order.
func addTopTensors(v *report.TracerDeviceView, d *tracer.Device, facts []tensorFacts, top int) {
	order := make([]int, len(d.Tensors))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(d.Tensors[b].SizeBytes, d.Tensors[a].SizeBytes) })
	for _, i := range order[:min(len(order), top)] {
		t, f := &d.Tensors[i], &facts[i]
		shape := t.Shape
		if t.Dims != nil {
			shape = formatShapeDims(t.Dims)
		}
		v.Top = append(v.Top, report.TracerTensorRow{Bytes: t.SizeBytes, Shape: shape, Dims: t.Dims, ElemBytes: t.ElementBytes(),
			Module: moduleOrUnknown(t.Module), Pattern: f.pattern, Phase: t.Phase, Category: f.category, Rule: f.rule,
			Site: f.site, Code: f.code, Released: t.Release != nil})
	}
}

func moduleOrUnknown(m string) string {
	if m == "" {
		return report.UnknownModule
	}
	return m
}

func formatShapeDims(d []int64) string {
	parts := make([]string, len(d))
	for i, v := range d {
		parts[i] = strconv.FormatInt(v, 10)
	}
	return "[" + strings.Join(parts, ", ") + "]"
}

// moduleViews builds the merged-pattern table and the merged hierarchy. Every tensor lands in exactly one
// pattern (Unknown included), so the table's bytes sum to the listed bytes.
func moduleViews(d *tracer.Device, facts []tensorFacts, listed int64) ([]report.ModuleStat, []report.ModuleNode) {
	type agg struct {
		bytes, own int64
		count      int
		concrete   map[string]struct{}
		children   []string
	}
	patterns := map[string]*agg{}
	var patternOrder []string
	nodes := map[string]*agg{}
	var roots []string
	for i := range d.Tensors {
		t := &d.Tensors[i]
		p := facts[i].pattern
		a, ok := patterns[p]
		if !ok {
			a = &agg{concrete: map[string]struct{}{}}
			patterns[p] = a
			patternOrder = append(patternOrder, p)
		}
		a.bytes += t.SizeBytes
		a.count++
		a.concrete[moduleOrUnknown(t.Module)] = struct{}{}

		// Hierarchy: every prefix of the pattern is a node; the concrete prefixes merged into it are counted.
		pparts := strings.Split(p, ".")
		cparts := strings.Split(moduleOrUnknown(t.Module), ".")
		if p == report.UnknownModule {
			cparts = []string{report.UnknownModule}
		}
		parent := ""
		for depth := range pparts {
			key := strings.Join(pparts[:depth+1], ".")
			n, ok := nodes[key]
			if !ok {
				n = &agg{concrete: map[string]struct{}{}}
				nodes[key] = n
				if parent == "" {
					roots = append(roots, key)
				} else {
					nodes[parent].children = append(nodes[parent].children, key)
				}
			}
			n.bytes += t.SizeBytes
			n.count++
			if depth < len(cparts) {
				n.concrete[strings.Join(cparts[:depth+1], ".")] = struct{}{}
			}
			if depth == len(pparts)-1 {
				n.own += t.SizeBytes
			}
			parent = key
		}
	}
	mods := make([]report.ModuleStat, 0, len(patternOrder))
	for _, p := range patternOrder {
		a := patterns[p]
		mods = append(mods, report.ModuleStat{Pattern: p, Bytes: a.bytes, Count: a.count, MergedModules: len(a.concrete), SharePct: units.Share(a.bytes, listed)})
	}
	slices.SortStableFunc(mods, func(a, b report.ModuleStat) int {
		return cmp.Or(cmp.Compare(b.Bytes, a.Bytes), strings.Compare(a.Pattern, b.Pattern))
	})

	bySize := func(keys []string) {
		slices.SortStableFunc(keys, func(a, b string) int {
			return cmp.Or(cmp.Compare(nodes[b].bytes, nodes[a].bytes), strings.Compare(a, b))
		})
	}
	var tree []report.ModuleNode
	var walk func(key string, depth int)
	walk = func(key string, depth int) {
		n := nodes[key]
		name := key[strings.LastIndexByte(key, '.')+1:]
		tree = append(tree, report.ModuleNode{Pattern: key, Name: name, Depth: depth, Bytes: n.bytes, OwnBytes: n.own, Count: n.count, MergedModules: len(n.concrete)})
		bySize(n.children)
		for _, c := range n.children {
			walk(c, depth+1)
		}
	}
	bySize(roots)
	for _, r := range roots {
		walk(r, 0)
	}
	if tree == nil {
		tree = []report.ModuleNode{}
	}
	return mods, tree
}

// userStack returns the creation stack without the tracer's own frames, built once per distinct stack so the
// categorizer's per-stack cache works.
func userStack(cache map[*tracer.Stack]*snapshot.Stack, s *tracer.Stack) *snapshot.Stack {
	if s == nil {
		return nil
	}
	if u, ok := cache[s]; ok {
		return u
	}
	u := &snapshot.Stack{Frames: s.Frames[s.FirstUserFrame():]}
	cache[s] = u
	return u
}

// isTorchPlumbing reports frames of torch's own op dispatch, functional wrappers and module call machinery: they
// sit between the code that asked for a tensor and the tracer, and name no useful site. torch/optim frames are
// kept because they are where optimizer state is created.
func isTorchPlumbing(f snapshot.Frame) bool {
	fn := strings.ReplaceAll(f.Filename, "\\", "/")
	i := strings.LastIndex(fn, "/torch/")
	if i < 0 && !strings.HasPrefix(fn, "torch/") {
		return false
	}
	rest := fn[i+1:]
	return !strings.HasPrefix(rest, "torch/optim/")
}

// tracerSite picks the creation site: the innermost frame that is neither the tracer's nor torch plumbing, else
// the innermost non-tracer frame.
func tracerSite(s *tracer.Stack) (site, code string) {
	if s == nil {
		return "(no stack)", ""
	}
	first := s.FirstUserFrame()
	if first >= len(s.Frames) {
		return "(tracer frames only)", ""
	}
	pick := first
	for i := first; i < len(s.Frames); i++ {
		if !isTorchPlumbing(s.Frames[i]) {
			pick = i
			break
		}
	}
	return categorize.Site(&s.Frames[pick]), s.Code[pick]
}

func userFrameStrings(s *tracer.Stack) []string {
	if s == nil {
		return []string{}
	}
	first := s.FirstUserFrame()
	out := make([]string, 0, len(s.Frames)-first)
	for i := first; i < len(s.Frames); i++ {
		out = append(out, categorize.Site(&s.Frames[i]))
	}
	return out
}

// tracerCategory decides a tensor's category from what the tracer format records (the scheme of its docs):
// tensors created in an optimizer-step phase are optimizer state; setup-phase tensors are the parameter and
// gradient buffers and the optimizer's fp32 main parameters, told apart by their creation site; tensors created
// in a module's forward are activations. Only what is left (backward and batch tensors with module Unknown) goes
// through the stack rules of the categorize package, since for the rest the phase and module are stronger
// evidence than the frames.
func tracerCategory(t *tracer.Tensor, user *snapshot.Stack, cz *categorize.Categorizer) (string, string) {
	phase := strings.ToLower(t.Phase)
	known := t.Module != "" && t.Module != report.UnknownModule
	switch {
	case isOptimizerStepPhase(phase):
		return categorize.OptimizerState, "tracer: optimizer-step phase"
	case isSetupPhase(phase):
		if user != nil {
			// Optimizer code as the snapshot rules know it (by path segment: "optim" as a substring also matched
			// training loops' optimization/ folders), or Megatron's fp32 main parameters.
			optimizer := cz.Stack(user).Category == categorize.OptimizerState
			for _, f := range user.Frames {
				optimizer = optimizer || strings.Contains(strings.ToLower(f.Name), "main_param")
			}
			if optimizer {
				return categorize.OptimizerState, "tracer: setup phase, created by optimizer code"
			}
		}
		if user != nil && len(user.Frames) > 0 && strings.Contains(strings.ToLower(siteText(t.Create)), "grad") {
			return categorize.Gradient, "tracer: setup phase, gradient buffer"
		}
		return categorize.Parameters, "tracer: setup phase"
	case known:
		return categorize.Activation, "tracer: created in a module forward"
	}
	if user != nil && len(user.Frames) > 0 {
		if d := cz.Stack(user); d.Category != categorize.Unknown {
			return d.Category, d.Rule
		}
	}
	return categorize.Unknown, ""
}

// siteText is the creation site's function name and source line, where buffer names such as grad_data appear.
func siteText(s *tracer.Stack) string {
	if s == nil {
		return ""
	}
	first := s.FirstUserFrame()
	if first >= len(s.Frames) {
		return ""
	}
	return s.Frames[first].Name + " " + s.Code[first]
}

func isOptimizerStepPhase(phase string) bool {
	for _, k := range []string{"optimizer_step", "optimizer-step", "optimizer step", "optim_step", "optimizer.step"} {
		if strings.Contains(phase, k) {
			return true
		}
	}
	return strings.HasPrefix(phase, "optimizer") || phase == "step"
}

func isSetupPhase(phase string) bool {
	for _, k := range []string{"setup", "init", "model_creation", "model-creation", "build", "load"} {
		if strings.Contains(phase, k) {
			return true
		}
	}
	return false
}

// gapExplanation says why peak_memory_mb exceeds the listed tensors.
func gapExplanation(dv *report.TracerDeviceView) string {
	switch {
	case dv.GapBytes < 0:
		return "The listed tensors exceed the recorded peak, which the tracer cannot produce; the file was edited or is corrupt."
	case dv.GapBytes == 0:
		return "The listed tensors account for the whole peak."
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s of the %s peak is not in the tensor list. The tracer copies the live list just before the allocation that sets the peak, so that allocation is never listed",
		units.Bytes(dv.GapBytes), units.Bytes(dv.PeakBytes))
	if dv.InferredMinMemoryMB >= 1 {
		fmt.Fprintf(&b, "; and every listed tensor is at least %s, so the file was saved with a size filter (min_memory_mb ≥ 1; Megatron's integration uses 1) that dropped all smaller tensors", units.Bytes(dv.SmallestListedBytes))
	}
	b.WriteString(".")
	return b.String()
}

func tracerRecommendations(p *report.TracerDeviceView) []findings.Finding {
	out := []findings.Finding{}
	if p.PeakBytes > 0 {
		if share := units.Share(p.GapBytes, p.PeakBytes); share >= findings.TracerUnlistedPeakPct {
			out = append(out, findings.NewTracerUnlistedPeak(p.GapBytes, p.PeakBytes, share))
		}
	}
	for _, m := range p.Modules {
		if m.Pattern == report.UnknownModule {
			if share := units.Share(m.Bytes, p.ListedBytes); share >= findings.TracerUnknownModulePct {
				out = append(out, findings.NewTracerUnknownModule(m.Bytes, share))
			}
		}
	}
	return out
}
