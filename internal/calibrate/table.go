package calibrate

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/memscan/memscan/internal/units"
	"github.com/memscan/memscan/report"
	"github.com/memscan/memscan/static"
)

// Metrics compared between prediction and measurement. The three totals are also used as the component name of
// their rows, so one summary covers both per-component and total errors.
const (
	MetricAtPeak        = "allocated_at_peak"     // per component, what is live at the peak
	MetricPeakAllocated = "peak_allocated"        // torch.cuda.max_memory_allocated
	MetricPeakReserved  = "peak_reserved"         // torch.cuda.max_memory_reserved
	MetricEndOfStep     = "end_of_step_allocated" // allocated between steps: weights, grads, optimizer states, buffers
)

// Prediction is the static estimator's figures for the GPU a measurement came from.
type Prediction struct {
	Stage         int              `json:"stage"`
	PeakAllocated int64            `json:"peak_allocated_bytes"`
	PeakReserved  int64            `json:"peak_reserved_bytes"`
	EndOfStep     int64            `json:"end_of_step_allocated_bytes"`
	PeakStage     string           `json:"peak_stage"`
	AtPeak        map[string]int64 `json:"at_peak"` // component → bytes live at the predicted peak
}

// SelectStage picks the pipeline stage a measurement belongs to: "" or "worst" (the estimator's worst stage),
// "first", "last" (Megatron logs memory on the last rank, which holds the last stage) or a stage index.
func SelectStage(rep *static.Report, sel string) (int, error) {
	n := len(rep.Stages)
	if n == 0 {
		return 0, fmt.Errorf("static report has no stages")
	}
	switch sel {
	case "", "worst":
		return rep.WorstStage, nil
	case "first":
		return 0, nil
	case "last":
		return n - 1, nil
	}
	i, err := strconv.Atoi(sel)
	if err != nil || i < 0 || i >= n {
		return 0, fmt.Errorf("stage %q: want worst, first, last or an index below %d", sel, n)
	}
	return i, nil
}

// PredictionOf extracts the figures of one pipeline stage; AtPeak is the stage's peak in package components'
// parts (static.Stage.ComponentsAtPeak), the terms the runtime attribution uses.
func PredictionOf(rep *static.Report, stage int) Prediction {
	st := rep.Stages[stage]
	p := Prediction{Stage: stage, PeakAllocated: st.PeakAllocated, PeakReserved: st.PeakReserved,
		EndOfStep: st.EndOfStepAllocated, PeakStage: st.PeakStage, AtPeak: map[string]int64{}}
	for _, part := range st.ComponentsAtPeak(rep.Config.Mode) {
		p.AtPeak[string(part.Component)] = part.Bytes
	}
	return p
}

// predictionFor is PredictionOf, or, for a run that ran out of memory where the estimator predicts that it does,
// OOMPredictionOf.
func predictionFor(rep *static.Report, stage int, oomed bool) Prediction {
	if oomed && rep.OOM != nil {
		return OOMPredictionOf(rep, stage)
	}
	return PredictionOf(rep, stage)
}

// OOMPredictionOf is the prediction at the estimator's failure point (static.OOMPoint): what is allocated when
// the request fails is the measured peak; the allocator has by then reserved all it could (the limit). The
// failing step is the first, so no optimizer state exists yet; what is allocated beyond weights and buffers was
// produced by the step so far, counted as activations (in a failing forward, the kept results and the running
// operator's transients).
func OOMPredictionOf(rep *static.Report, stage int) Prediction {
	st, o := rep.Stages[stage], rep.OOM
	p := Prediction{Stage: stage, PeakAllocated: o.AllocatedBytes, PeakReserved: o.LimitBytes, PeakStage: o.Phase,
		AtPeak: map[string]int64{Weights: st.Weights, Other: st.Other}}
	if o.Step > 1 {
		p.AtPeak[Optimizer] = st.Optimizer
	}
	p.AtPeak[Activations] = max(0, o.AllocatedBytes-st.Weights-st.Other-p.AtPeak[Optimizer])
	return p
}

// Measured holds the runtime figures of one run; 0 means not measured.
type Measured struct {
	PeakAllocatedBytes int64 `json:"peak_allocated_bytes,omitempty" yaml:"peak_allocated_bytes"`
	PeakReservedBytes  int64 `json:"peak_reserved_bytes,omitempty" yaml:"peak_reserved_bytes"`
	EndOfStepBytes     int64 `json:"end_of_step_allocated_bytes,omitempty" yaml:"end_of_step_allocated_bytes"`
	// OOM says the run ran out of memory (a runtime input with an OOM event says so too): its peak is the
	// allocation that failed, compared with the estimator's failure point, and no step ended.
	OOM bool `json:"oom,omitempty" yaml:"oom"`
	// Leak names memory that grew every iteration of a runtime input (analyze's leak suspects), "" for none:
	// the measured peak holds what leaked by then, which no configuration predicts.
	Leak string `json:"leak,omitempty" yaml:"leak"`
	// Source names where the figures come from (a file and series, a log line).
	Source string `json:"source,omitempty" yaml:"source"`
}

// merge fills the figures m lacks from o.
func (m *Measured) merge(o Measured) {
	if m.PeakAllocatedBytes == 0 {
		m.PeakAllocatedBytes = o.PeakAllocatedBytes
	}
	if m.PeakReservedBytes == 0 {
		m.PeakReservedBytes = o.PeakReservedBytes
	}
	if m.EndOfStepBytes == 0 {
		m.EndOfStepBytes = o.EndOfStepBytes
	}
	if m.Source == "" {
		m.Source = o.Source
	}
	m.OOM = m.OOM || o.OOM
	if m.Leak == "" {
		m.Leak = o.Leak
	}
}

// MeasuredOf reads the totals of runtime reports. With several reports of one run (ranks, or a snapshot next to
// its log) the peaks are the maxima, as the most loaded GPU is what a prediction must cover.
func MeasuredOf(reports []*report.Report) Measured {
	var m Measured
	var src []string
	for _, r := range reports {
		if r == nil {
			continue
		}
		var pa, pr, end int64
		switch p := r.Part.(type) {
		case *report.LogReport:
			lg := p.Log
			pa, pr = max(lg.PeakAllocatedBytes, 0), max(lg.PeakReservedBytes, 0)
			for _, rk := range lg.Ranks {
				if rk.Rank == lg.PeakRank || len(lg.Ranks) == 1 {
					end = max(end, rk.LastAllocated)
				}
			}
		case *report.TimelineReport:
			pa, end = p.MemoryTimeline.PeakBytes, p.MemoryTimeline.FinalBytes
		case *report.TracerReport:
			pa = p.PeakBytes
		case *report.SnapshotReport: // allocated at capture is the steady state between steps
			end, pr = p.AllocatedBytes, p.ReservedBytes
			if r.Peak != nil {
				pa = r.Peak.Bytes
			}
			for _, ts := range p.Timeline {
				for _, v := range ts.Reserved {
					pr = max(pr, v)
				}
			}
			m.OOM = m.OOM || len(p.OOMs) > 0
			if l := p.LeakSuspects; len(l) > 0 && m.Leak == "" {
				m.Leak = fmt.Sprintf("%s (%s) grows by %s per iteration over %d iterations in %s", l[0].Site, l[0].Category,
					units.Bytes(l[0].PerIterationBytes), l[0].Markers, r.File)
			}
		}
		m.PeakAllocatedBytes = max(m.PeakAllocatedBytes, pa)
		m.PeakReservedBytes = max(m.PeakReservedBytes, pr)
		m.EndOfStepBytes = max(m.EndOfStepBytes, end)
		src = append(src, r.File+" ("+r.Format+")")
	}
	m.Source = strings.Join(src, ", ")
	return m
}

// Row is one line of a calibration table.
type Row struct {
	ID        string `json:"id"`
	Metric    string `json:"metric"`
	Component string `json:"component"` // a component for allocated_at_peak rows, else the metric name
	// PredictedBytes and MeasuredBytes are per GPU; ErrorBytes = predicted − measured; ErrorPct is ErrorBytes
	// relative to the measurement, signed (positive = over-estimate). It is null in JSON ("-" in tables) when
	// the measurement is 0 or below MinRelativeShare of the run's total: a relative error to (almost) nothing
	// has no useful value, so such rows are also left out of the median/max summaries.
	PredictedBytes int64    `json:"predicted_bytes"`
	MeasuredBytes  int64    `json:"measured_bytes"`
	ErrorBytes     int64    `json:"error_bytes"`
	ErrorPct       *float64 `json:"error_pct"`
	// ErrorOfTotalPct is ErrorBytes as a share of the run's total measured memory (its measured peak allocated,
	// else the attributed total): defined for every row, so a 20 MiB miss on a 0 B component reads as ≈ 0.05 %.
	ErrorOfTotalPct float64 `json:"error_of_total_pct"`
	// Confidence is the attribution's confidence for component rows (1 for totals read directly).
	Confidence float64 `json:"confidence"`
	// Corrected is the prediction after a correction model, when one was applied; its relative error is
	// omitted where ErrorPct is null.
	CorrectedBytes    *int64   `json:"corrected_bytes,omitempty"`
	CorrectedErrorPct *float64 `json:"corrected_error_pct,omitempty"`
}

// MinRelativeShare is the smallest measurement, as a share of the run's total measured memory, that a relative
// error is computed for: below it a few MiB of difference read as thousands of percent.
const MinRelativeShare = 0.01

// NewRow computes the error arithmetic of one comparison, relative to the measurement itself as the run's total;
// WithTotal rescales it for a component of a larger run.
func NewRow(id, metric, component string, predicted, measured int64, conf float64) Row {
	r := Row{ID: id, Metric: metric, Component: component, PredictedBytes: predicted, MeasuredBytes: measured,
		ErrorBytes: predicted - measured, Confidence: conf}
	return r.WithTotal(measured)
}

// WithTotal sets the errors of r for a run whose total measured memory is total.
func (r Row) WithTotal(total int64) Row {
	r.ErrorPct = relativeError(r.PredictedBytes, r.MeasuredBytes, total)
	r.ErrorOfTotalPct = 0
	if total > 0 {
		r.ErrorOfTotalPct = float64(r.ErrorBytes) / float64(total) * 100
	}
	return r
}

// relativeError is ErrorPct when the measurement is large enough for it to mean something, else nil.
func relativeError(predicted, measured, total int64) *float64 {
	if measured <= 0 || float64(measured) < MinRelativeShare*float64(total) {
		return nil
	}
	e := ErrorPct(predicted, measured)
	return &e
}

// ErrorPct is (predicted − measured) / measured × 100; 0 when nothing was measured.
func ErrorPct(predicted, measured int64) float64 {
	if measured == 0 {
		return 0
	}
	return float64(predicted-measured) / float64(measured) * 100
}

// Stat summarizes the absolute relative errors of one component (or total) over runs. Rows without a relative
// error (see Row.ErrorPct) are counted in Undefined and left out of N, the median and the maximum.
type Stat struct {
	N         int `json:"n"`
	Undefined int `json:"undefined_n,omitempty"`
	// MaxAbsOfTotalPct is the largest |error| as a share of its run's total, over every row.
	MaxAbsOfTotalPct float64 `json:"max_abs_error_of_total_pct"`
	MedianAbsPct     float64 `json:"median_abs_error_pct"`
	MaxAbsPct        float64 `json:"max_abs_error_pct"`
	MaxID            string  `json:"max_id"` // the run with the largest error
	// Corrected statistics, when a correction model was applied to every row.
	CorrectedMedianAbsPct *float64 `json:"corrected_median_abs_error_pct,omitempty"`
	CorrectedMaxAbsPct    *float64 `json:"corrected_max_abs_error_pct,omitempty"`
}

// Summarize computes the median and maximum absolute % error per component over rows.
func Summarize(rows []Row) map[string]Stat {
	abs := map[string][]float64{}
	cabs := map[string][]float64{}
	out := map[string]Stat{}
	for _, r := range rows {
		s := out[r.Component]
		s.MaxAbsOfTotalPct = max(s.MaxAbsOfTotalPct, math.Abs(r.ErrorOfTotalPct))
		if r.ErrorPct == nil {
			s.Undefined++
			out[r.Component] = s
			continue
		}
		a := math.Abs(*r.ErrorPct)
		if len(abs[r.Component]) == 0 || a > s.MaxAbsPct {
			s.MaxAbsPct, s.MaxID = a, r.ID
		}
		abs[r.Component] = append(abs[r.Component], a)
		if r.CorrectedErrorPct != nil {
			cabs[r.Component] = append(cabs[r.Component], math.Abs(*r.CorrectedErrorPct))
		}
		s.N++
		out[r.Component] = s
	}
	for c, v := range abs {
		s := out[c]
		s.MedianAbsPct = units.Median(v)
		if cv := cabs[c]; len(cv) == len(v) {
			med, mx := units.Median(cv), slices.Max(cv)
			s.CorrectedMedianAbsPct, s.CorrectedMaxAbsPct = &med, &mx
		}
		out[c] = s
	}
	return out
}

// SummaryOrder lists summary keys in report order: totals first, then components.
func SummaryOrder(sum map[string]Stat) []string {
	order := append([]string{MetricPeakAllocated, MetricPeakReserved, MetricEndOfStep}, Components()...)
	var out []string
	for _, k := range order {
		if _, ok := sum[k]; ok {
			out = append(out, k)
		}
	}
	var rest []string
	for k := range sum {
		if !slices.Contains(out, k) {
			rest = append(rest, k)
		}
	}
	slices.Sort(rest)
	return append(out, rest...)
}

// OperatorBytes is one static operator record counted toward a component.
type OperatorBytes struct {
	Name  string `json:"name"`
	Phase string `json:"phase"`
	Bytes int64  `json:"bytes"`
}

// Miss explains one component's error: the runtime sites holding it and the static records predicting it.
type Miss struct {
	Component  string   `json:"component"`
	ErrorBytes int64    `json:"error_bytes"`
	ErrorPct   *float64 `json:"error_pct"` // null as in Row
	// ErrorOfTotalPct is as in Row.
	ErrorOfTotalPct float64         `json:"error_of_total_pct"`
	Sites           []SiteBytes     `json:"sites"`     // runtime, largest first
	Operators       []OperatorBytes `json:"operators"` // static, largest first
}

// staticComponent maps an operator record of the static report to a component and the bytes it contributes.
func staticComponent(op static.Operator) (string, int64) {
	switch op.Category {
	case "weights":
		return Weights, op.MemoryBytes
	case "grads":
		return Gradients, op.MemoryBytes
	case "optimizer":
		return Optimizer, op.MemoryBytes
	case "other", "communication":
		return Other, op.MemoryBytes
	}
	if op.MemoryBytes == 0 && op.TempBytes > 0 {
		return Temporaries, op.TempBytes
	}
	return Activations, op.MemoryBytes
}

// explainMisses lists, for the components with the largest absolute errors, the sites and operators behind them.
func explainMisses(rows []Row, at *Attribution, ops []static.Operator, n int) []Miss {
	var comp []Row
	for _, r := range rows {
		if r.Metric == MetricAtPeak && r.ErrorBytes != 0 {
			comp = append(comp, r)
		}
	}
	slices.SortStableFunc(comp, func(a, b Row) int { return cmp.Compare(abs64(b.ErrorBytes), abs64(a.ErrorBytes)) })
	if len(comp) > n {
		comp = comp[:n]
	}
	var out []Miss
	for _, r := range comp {
		m := Miss{Component: r.Component, ErrorBytes: r.ErrorBytes, ErrorPct: r.ErrorPct, ErrorOfTotalPct: r.ErrorOfTotalPct, Sites: []SiteBytes{}, Operators: []OperatorBytes{}}
		if at != nil {
			for _, s := range at.Sites {
				if s.Component == r.Component && len(m.Sites) < 5 {
					m.Sites = append(m.Sites, s)
				}
			}
		}
		for _, op := range ops {
			c, b := staticComponent(op)
			if c == r.Component && b > 0 {
				m.Operators = append(m.Operators, OperatorBytes{Name: op.Name, Phase: op.Phase, Bytes: b})
			}
		}
		slices.SortStableFunc(m.Operators, func(a, b OperatorBytes) int { return cmp.Compare(b.Bytes, a.Bytes) })
		if len(m.Operators) > 5 {
			m.Operators = m.Operators[:5]
		}
		out = append(out, m)
	}
	return out
}

func abs64(v int64) int64 {
	if v < 0 {
		return -v
	}
	return v
}

// runTotal is the run's total measured memory that shares of it refer to: the measured peak allocated, else the
// attributed total at the peak, else the largest measured figure.
func runTotal(m Measured, at *Attribution) int64 {
	if m.PeakAllocatedBytes > 0 {
		return m.PeakAllocatedBytes
	}
	var sum int64
	if at != nil {
		for _, cb := range at.Components {
			sum += max(cb.Bytes, 0)
		}
	}
	if sum > 0 {
		return sum
	}
	return max(m.PeakReservedBytes, m.EndOfStepBytes)
}

// compareRows builds the rows of one run: the three totals that were measured and, when an attribution exists,
// each component at the peak.
func compareRows(id string, p Prediction, m Measured, at *Attribution) []Row {
	total := runTotal(m, at)
	var rows []Row
	add := func(metric, component string, pred, meas int64, conf float64) {
		rows = append(rows, NewRow(id, metric, component, pred, meas, conf).WithTotal(total))
	}
	if m.PeakAllocatedBytes > 0 {
		add(MetricPeakAllocated, MetricPeakAllocated, p.PeakAllocated, m.PeakAllocatedBytes, 1)
	}
	if m.PeakReservedBytes > 0 {
		add(MetricPeakReserved, MetricPeakReserved, p.PeakReserved, m.PeakReservedBytes, 1)
	}
	if m.EndOfStepBytes > 0 {
		add(MetricEndOfStep, MetricEndOfStep, p.EndOfStep, m.EndOfStepBytes, 1)
	}
	if at != nil {
		for _, cb := range at.Components {
			pred := p.AtPeak[cb.Component]
			if cb.Bytes == 0 && pred == 0 {
				continue
			}
			add(MetricAtPeak, cb.Component, pred, cb.Bytes, cb.Confidence)
		}
	}
	return rows
}
