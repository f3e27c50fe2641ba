// Package calibrate compares the static estimator's predictions with runtime measurements: it attributes runtime
// memory to the estimator's components (weights, gradients, optimizer states, activations, temporaries, other),
// builds per-run and many-run error tables, and fits a small, explainable correction model that
// `memscan static --calibration` applies next to the raw prediction. Run orchestrates a whole calibration
// (evaluate every run, then apply or fit and cross-validate corrections).
//
// It imports static, analyze (and what analyze needs to read runtime files) and units; it renders nothing and
// writes no files (results does), and it does not import plots.
package calibrate

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/memscan/memscan/internal/components"
	"github.com/memscan/memscan/report"
)

// Components of the static estimator, in report order; their definitions are package components'.
const (
	Weights     = string(components.Weights)
	Gradients   = string(components.Gradients)
	Optimizer   = string(components.OptimizerStates)
	Activations = string(components.Activations)
	Temporaries = string(components.Temporaries)
	KVCache     = string(components.KVCache)
	Other       = string(components.Other)
)

// Components lists the component names in report order (components.All's).
func Components() []string {
	var out []string
	for _, c := range components.All() {
		out = append(out, string(c))
	}
	return out
}

// ComponentBytes is what one component holds in a runtime measurement.
type ComponentBytes struct {
	Component string `json:"component"`
	Bytes     int64  `json:"bytes"`
	// Confidence is the byte-weighted confidence of the mappings that fed this component (0..1).
	Confidence float64 `json:"confidence"`
	// From names the runtime categories, phases or profiler categories mapped here.
	From []string `json:"from"`
}

// SiteBytes is one allocation site (or module/phase) and the component it was attributed to.
type SiteBytes struct {
	Site      string `json:"site"`
	Category  string `json:"category"`
	Component string `json:"component"` // "" when unattributed
	Bytes     int64  `json:"bytes"`
}

// Attribution maps one runtime report's live memory onto the estimator's components.
type Attribution struct {
	// Source says what the bytes are: "snapshot-peak" (live set at the trace peak), "snapshot" (allocated blocks at
	// snapshot time), "tracer" (tensors alive at the tracer's peak), "timeline" (profiler categories at the peak).
	Source     string           `json:"source"`
	TotalBytes int64            `json:"total_bytes"`
	Components []ComponentBytes `json:"components"`
	// UnattributedBytes could not be mapped to any component (Unknown categories, phases with no rule).
	UnattributedBytes int64 `json:"unattributed_bytes"`
	// Confidence is the byte-weighted confidence over the attributed bytes; unattributed bytes count as 0.
	Confidence float64     `json:"confidence"`
	Sites      []SiteBytes `json:"sites,omitempty"`
}

// Bytes returns what the attribution put in component c.
func (a *Attribution) Bytes(c string) int64 {
	if a == nil {
		return 0
	}
	for _, cb := range a.Components {
		if cb.Component == c {
			return cb.Bytes
		}
	}
	return 0
}

// mapping is one rule: a runtime label mapped to a component with a confidence that says how often that label
// really means that component.
type mapping struct {
	component  string
	confidence float64
}

// categoryMap maps memscan's allocation categories (package categorize) to components. Categories that name a
// model part (Attention, Linear/MatMul, ...) are forward intermediates saved for backward, i.e. activations,
// but a matmul site also allocates transient outputs, hence the lower confidence.
var categoryMap = map[string]mapping{
	"parameters/weights": {Weights, 0.9},
	"gradient":           {Gradients, 0.85},
	"optimizer state":    {Optimizer, 0.9},
	"fsdp":               {Weights, 0.5}, // flat parameters mostly; unsharded all-gathers and reduce-scatter grads too
	"autograd":           {Activations, 0.7},
	"activation":         {Activations, 0.7},
	"attention":          {Activations, 0.65},
	"linear/matmul":      {Activations, 0.6},
	"normalization":      {Activations, 0.7},
	"embedding":          {Activations, 0.6},
	"expert/moe":         {Activations, 0.55},
	"loss/logits":        {Temporaries, 0.6}, // logits and loss gradients live only around the head
	"kv cache":           {KVCache, 0.9},
	"communication":      {Other, 0.7},
	"data/input":         {Other, 0.6},
}

// lifetimeMap maps the analysis' lifetime components (package components) to the estimator's: the same
// definitions on both sides, so each maps to itself.
var lifetimeMap = map[components.Component]mapping{
	components.Weights:         {Weights, 0.95},
	components.Gradients:       {Gradients, 0.95},
	components.OptimizerStates: {Optimizer, 0.95},
	components.Activations:     {Activations, 0.9},
	components.Temporaries:     {Temporaries, 0.9},
	components.KVCache:         {KVCache, 0.9},
	components.Other:           {Other, 0.7},
}

// profilerMap maps torch.profiler memory-timeline categories, which PyTorch itself assigns, to components.
var profilerMap = map[string]mapping{
	"parameter":       {Weights, 0.95},
	"gradient":        {Gradients, 0.95},
	"optimizer_state": {Optimizer, 0.95},
	"activation":      {Activations, 0.9},
	"temporary":       {Temporaries, 0.9},
	"autograd_detail": {Activations, 0.6},
	"input":           {Other, 0.8},
}

// phaseMap maps tracer phase names (matched as lower-case substrings, first match wins) to components. A tracer
// records the phase a tensor was created in: model setup creates weights (and, with the distributed optimizer,
// grad buffers and states), an optimizer phase creates states, and forward/backward create activations.
var phaseMap = []struct {
	substr string
	m      mapping
}{
	// Megatron's "setup_model_and_optimizer" creates parameters, grad buffers and fp32 main params; Adam's
	// moments appear lazily in the first optimizer step. Checked before "optim" for that reason.
	{"setup_model", mapping{Weights, 0.5}},
	{"optim", mapping{Optimizer, 0.7}},
	{"forward", mapping{Activations, 0.6}}, // also "forward_backward_iter_N": what a step creates is mostly saved activations
	{"backward", mapping{Gradients, 0.5}},
	{"model", mapping{Weights, 0.5}},
	{"init", mapping{Weights, 0.4}},
}

func lookupCategory(name string) (mapping, bool) {
	m, ok := categoryMap[strings.ToLower(strings.TrimSpace(name))]
	return m, ok
}

func lookupProfiler(name string) (mapping, bool) {
	k := strings.ToLower(strings.TrimSpace(name))
	k = strings.ReplaceAll(k, " ", "_")
	m, ok := profilerMap[k]
	return m, ok
}

func lookupPhase(name string) (mapping, bool) {
	k := strings.ToLower(name)
	for _, p := range phaseMap {
		if strings.Contains(k, p.substr) {
			return p.m, true
		}
	}
	return mapping{}, false
}

// accumulator sums bytes per component with their confidence.
type accumulator struct {
	bytes map[string]int64
	conf  map[string]float64 // Σ bytes·confidence
	from  map[string][]string
	unatt int64
	total int64
}

func newAccumulator() *accumulator {
	return &accumulator{bytes: map[string]int64{}, conf: map[string]float64{}, from: map[string][]string{}}
}

func (a *accumulator) add(label string, bytes int64, m mapping, ok bool) {
	if bytes <= 0 {
		return
	}
	a.total += bytes
	if !ok {
		a.unatt += bytes
		return
	}
	a.bytes[m.component] += bytes
	a.conf[m.component] += float64(bytes) * m.confidence
	if !slices.Contains(a.from[m.component], label) {
		a.from[m.component] = append(a.from[m.component], label)
	}
}

func (a *accumulator) result(source string) *Attribution {
	at := &Attribution{Source: source, TotalBytes: a.total, UnattributedBytes: a.unatt}
	var weighted float64
	for _, c := range Components() {
		b := a.bytes[c]
		cb := ComponentBytes{Component: c, Bytes: b, From: a.from[c]}
		if cb.From == nil {
			cb.From = []string{}
		}
		if b > 0 {
			cb.Confidence = a.conf[c] / float64(b)
		}
		weighted += a.conf[c]
		at.Components = append(at.Components, cb)
	}
	if a.total > 0 {
		at.Confidence = weighted / float64(a.total)
	}
	return at
}

// Attribute maps a runtime report onto the estimator's components. It prefers the most specific view the report
// has: profiler categories (assigned by PyTorch), then the snapshot's live set at the trace peak, then the tracer's
// phases, then the allocated blocks at snapshot time. It returns nil when the report carries no breakdown (a
// training log has totals only).
func Attribute(r *report.Report) *Attribution {
	if r == nil {
		return nil
	}
	// A timeline's or a tracer file's own breakdown comes first; without one, the views every kind may have.
	switch p := r.Part.(type) {
	case *report.TimelineReport:
		if comp := p.MemoryTimeline.PeakComposition; len(comp) > 0 {
			acc := newAccumulator()
			for _, c := range comp {
				m, ok := lookupProfiler(c.Name)
				acc.add(c.Name, c.Bytes, m, ok)
			}
			return acc.result("timeline")
		}
	case *report.TracerReport:
		if len(p.Phases) > 0 {
			acc := newAccumulator()
			for _, ph := range p.Phases {
				m, ok := lookupPhase(ph.Name)
				acc.add("phase "+ph.Name, ph.Bytes, m, ok)
			}
			at := acc.result("tracer")
			at.Sites = siteRows(r.Sites)
			return at
		}
	}
	switch {
	case r.Peak != nil && len(r.Peak.Components) > 0:
		// The analysis attributed every live block at the peak by its stack and lifetime, in the components' own
		// terms: weights kept from the setup, parameter gradients kept after backward, states kept after the
		// optimizer step, activations kept from forward for backward, transients as temporaries.
		acc := newAccumulator()
		for _, c := range r.Peak.Components {
			m, ok := lifetimeMap[components.Component(c.Name)]
			acc.add("lifetime "+c.Name, c.Bytes, m, ok)
		}
		at := acc.result("snapshot-peak-lifetime")
		at.Sites = siteRows(r.Peak.Sites)
		return at
	case r.Peak != nil && len(r.Peak.Categories) > 0:
		acc := newAccumulator()
		for _, c := range r.Peak.Categories {
			m, ok := lookupCategory(c.Name)
			acc.add(c.Name, c.Bytes, m, ok)
		}
		at := acc.result("snapshot-peak")
		at.Sites = siteRows(r.Peak.Sites)
		return at
	case len(r.Categories) > 0:
		acc := newAccumulator()
		for _, c := range r.Categories {
			m, ok := lookupCategory(c.Name)
			acc.add(c.Name, c.Bytes, m, ok)
		}
		at := acc.result("snapshot")
		at.Sites = siteRows(r.Sites)
		return at
	}
	return nil
}

// siteRows attributes each site through its category, largest first.
func siteRows(sites []report.SiteStat) []SiteBytes {
	out := make([]SiteBytes, 0, len(sites))
	for _, s := range sites {
		m, ok := lookupCategory(s.Category)
		sb := SiteBytes{Site: s.Site, Category: s.Category, Bytes: s.Bytes}
		if ok {
			sb.Component = m.component
		}
		out = append(out, sb)
	}
	slices.SortStableFunc(out, func(a, b SiteBytes) int { return cmp.Compare(b.Bytes, a.Bytes) })
	return out
}

// ObservedPeakStageOf is the training stage of the measured peak as the trace's phases place it: the moment
// whose live set the components were measured at, and what the estimator's steady-state step predicts. Where the
// peak lies outside any phase (setup, an unsplit trace) it is the stage of iteration 1's own peak, and without
// phases ObservedPeakStage's inference from the attributed live set.
func ObservedPeakStageOf(r *report.Report, a *Attribution) string {
	if r != nil && r.Peak != nil {
		if st := stageOfPhase(r.Peak.Phase); st != "" {
			return st
		}
		if st := stageOfPhase(r.Peak.FirstIterationPhase); st != "" {
			return st
		}
	}
	return ObservedPeakStage(a)
}

// stageOfPhase names a phase (package phases) as the estimator names its stages; "" for none.
func stageOfPhase(phase string) string {
	switch phase {
	case "forward", "backward":
		return phase
	case "optimizer":
		return "optimizer_step"
	}
	return ""
}

// firstStepNote explains a first iteration that peaks in another stage than the measured peak: in step 1 the
// optimizer states are created (so its optimizer step can peak) and shapes may differ from the later steps.
func firstStepNote(r *report.Report, observed string) string {
	if r == nil || r.Peak == nil {
		return ""
	}
	first := stageOfPhase(r.Peak.FirstIterationPhase)
	if first == "" || first == observed || r.Peak.Iteration <= 1 {
		return ""
	}
	return fmt.Sprintf("iteration 1 peaks in %s; the measured peak, in iteration %d, in %s", first, r.Peak.Iteration, observed)
}

// ObservedPeakStage infers the training stage at the measured peak from the attributed live set: almost no
// activations means the optimizer step; activations together with gradients mean backward; activations alone
// mean forward. It returns "" when there is no breakdown.
func ObservedPeakStage(a *Attribution) string {
	if a == nil || a.TotalBytes == 0 {
		return ""
	}
	act := a.Bytes(Activations) + a.Bytes(Temporaries)
	grads := a.Bytes(Gradients)
	total := a.TotalBytes
	switch {
	case act*20 < total: // under 5 % of the peak
		return "optimizer_step"
	case grads*100 >= total && grads > 0:
		return "backward"
	}
	return "forward"
}
