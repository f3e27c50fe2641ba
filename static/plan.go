package static

import (
	"context"
	"fmt"
	"strings"

	"github.com/memscan/memscan/internal/units"
)

// fitsWith reports whether cfg fits, with its device total; configs that fail validation do not fit.
func fitsWith(cfg Config) (bool, *Report) {
	r, err := estimateCore(cfg)
	if err != nil {
		return false, nil
	}
	return r.Fit.Fits, r
}

// search finds the largest v for which set(v) fits: from start (the configured value), doubling or halving over
// multiples of step until the answer is bracketed, then bisecting, then bisecting between the last step
// multiple that fits and the first that does not over multiples of fine (step is a multiple of fine), so the
// answer is exact to fine rather than to step; limit caps v. The result names param and carries the memory of
// the largest v that fits (Max 0 and the memory of the smallest value tried when even fine does not fit).
func search(ctx context.Context, base Config, param string, start, step, fine, limit int, set func(*Config, int)) (*SearchResult, error) {
	try := func(v int) (bool, *Report) {
		c := base
		set(&c, v)
		return fitsWith(c)
	}
	result := func(v int, r *Report) *SearchResult {
		res := &SearchResult{Parameter: param, Max: v}
		if r != nil {
			res.PeakBytes, res.DeviceBytes = r.Summary.PeakMemoryBytes, r.Summary.DeviceTotalBytes
		}
		return res
	}
	// bisect narrows lo (fits, or 0) and hi (does not fit, or past limit), both in units of unit, to adjacent
	// values.
	bisect := func(lo, hi, unit int, best *Report) (int, *Report, error) {
		for hi-lo > 1 {
			if err := ctx.Err(); err != nil {
				return 0, nil, err
			}
			mid := lo + (hi-lo)/2
			if ok, r := try(mid * unit); ok {
				lo, best = mid, r
			} else {
				hi = mid
			}
		}
		return lo, best, nil
	}
	// lo fits (or is 0) and hi does not (or is past limit), in units of step.
	lo, hi := 0, limit/step+1
	var best, smallest *Report
	if k := min(max(start/step, 1), limit/step); k >= 1 {
		ok, r := try(k * step)
		if ok {
			lo, best = k, r
			for n := 2 * k; n*step <= limit; n *= 2 {
				if err := ctx.Err(); err != nil {
					return nil, err
				}
				ok, r := try(n * step)
				if !ok {
					hi = n
					break
				}
				lo, best = n, r
			}
		} else {
			hi, smallest = k, r
			for n := k / 2; n >= 1; n /= 2 {
				if err := ctx.Err(); err != nil {
					return nil, err
				}
				ok, r := try(n * step)
				if ok {
					lo, best = n, r
					break
				}
				hi, smallest = n, r
			}
		}
	}
	lo, best, err := bisect(lo, hi, step, best)
	if err != nil {
		return nil, err
	}
	if fine < step {
		k := step / fine
		var fineLo int
		if fineLo, best, err = bisect(lo*k, min((lo+1)*k, limit/fine+1), fine, best); err != nil {
			return nil, err
		}
		lo, step = fineLo, fine
	}
	if lo == 0 {
		if best == nil {
			best = smallest
		}
		return result(0, best), nil
	}
	return result(lo*step, best), nil
}

// MaxBatchSize finds the largest micro-batch (training) or batch (inference) that fits the GPU.
func MaxBatchSize(ctx context.Context, cfg Config) (*SearchResult, error) {
	if err := cfg.Resolve(); err != nil {
		return nil, err
	}
	base := cfg
	base.Training.GlobalBatchSize = 0 // re-derived from the micro-batch
	param := "training.micro_batch_size"
	set := func(c *Config, v int) { c.Training.MicroBatchSize = v }
	if cfg.Mode == "inference" {
		param = "inference.batch_size"
		set = func(c *Config, v int) { c.Inference.BatchSize = v }
	}
	start := cfg.Training.MicroBatchSize
	if cfg.Mode == "inference" {
		start = cfg.Inference.BatchSize
	}
	res, err := search(ctx, base, param, start, 1, 1, 1<<16, set)
	if err != nil {
		return nil, err
	}
	if res.Max == 0 {
		res.Note = "even batch 1 does not fit"
	}
	return res, nil
}

// MaxSeqLength finds the longest sequence (training) or prompt (inference) that fits, exact to the token or to
// the multiple that keeps context parallelism (2·cp, its load-balanced halves) and sequence parallelism (tp)
// valid: searching in 256-token steps only can leave up to 255 tokens that fit unreported.
func MaxSeqLength(ctx context.Context, cfg Config) (*SearchResult, error) {
	if err := cfg.Resolve(); err != nil {
		return nil, err
	}
	fine := 1
	if cfg.Parallel.CP > 1 {
		fine = 2 * cfg.Parallel.CP
	}
	if cfg.Parallel.SequenceParallel && cfg.Parallel.TP > 1 {
		fine = lcm(fine, cfg.Parallel.TP)
	}
	step := 256
	for _, m := range []int{2 * cfg.Parallel.CP, cfg.Parallel.TP} {
		step = lcm(step, m)
	}
	param := "training.seq_length"
	set := func(c *Config, v int) {
		c.Training.SeqLength = v
		c.Training.SeqLengths = nil // the search is over one fixed length
		if c.Model.PositionEmbedding == "learned" && c.Model.MaxPositionEmbeddings < v {
			c.Model.MaxPositionEmbeddings = v
		}
	}
	start := cfg.Training.SeqLength
	if cfg.Mode == "inference" {
		param, step, fine, start = "inference.prompt_length", 256, 1, cfg.Inference.PromptLength
		set = func(c *Config, v int) { c.Inference.PromptLength = v }
	}
	res, err := search(ctx, cfg, param, start, step, fine, 1<<22, set)
	if err != nil {
		return nil, err
	}
	if res.Max == 0 {
		res.Note = fmt.Sprintf("even %d tokens do not fit", fine)
	}
	return res, nil
}

func lcm(a, b int) int {
	if a == 0 || b == 0 {
		return max(a, b)
	}
	x, y := a, b
	for y != 0 {
		x, y = y, x%y
	}
	return a / x * b
}

// strategy is one parallel layout on the configured GPUs: a strategy-table row, or the layout a recommendation
// proposes. Both are built by strategyConfig so that they describe the same configuration.
type strategy struct {
	name         string
	tp, pp, zero int
	distOpt, sp  bool
}

// strategyConfig builds the configuration of st from the resolved cfg on the same GPUs and global batch: the
// data-parallel size and the micro-batch count are re-derived, and the micro-batch shrinks when the global batch
// would not divide. note says what had to give; ok is false when no micro-batch keeps the global batch.
func strategyConfig(cfg Config, st strategy) (c Config, note string, ok bool) {
	c = cfg
	n, gbs := cfg.Hardware.NumGPUs, cfg.Training.GlobalBatchSize
	c.Parallel.TP, c.Parallel.PP, c.Parallel.ZeroStage = st.tp, st.pp, st.zero
	c.Parallel.DistributedOptimizer, c.Parallel.SequenceParallel = st.distOpt, st.sp
	c.Parallel.DP, c.Parallel.NumMicrobatches = 0, 0
	if st.tp != cfg.Parallel.TP {
		c.Parallel.ETP = 0
	}
	// The gradient buffer follows the sharding (persistent with the distributed optimizer) unless the layout
	// keeps the optimizer sharding as configured, where an explicit choice stays.
	if st.zero != cfg.Parallel.ZeroStage || st.distOpt != cfg.Parallel.DistributedOptimizer {
		c.Parallel.GradBuffer = "auto"
	}
	if st.pp == 1 {
		c.Parallel.VirtualStages, c.Parallel.PPSchedule = 1, "1f1b"
	} else if c.Parallel.VirtualStages > 1 && c.Model.NumLayers%(st.pp*c.Parallel.VirtualStages) != 0 {
		c.Parallel.VirtualStages, c.Parallel.PPSchedule = 1, "1f1b"
	}
	if c.Parallel.EP > 1 && (n/st.pp)%(c.Parallel.EP*st.tp) != 0 {
		c.Parallel.EP = 1
	}
	dp := n / (st.tp * st.pp * c.Parallel.CP)
	for dp > 0 && c.Training.MicroBatchSize > 1 && gbs%(c.Training.MicroBatchSize*dp) != 0 {
		c.Training.MicroBatchSize-- // keep the global batch: fewer samples per GPU per micro-batch
	}
	if dp == 0 || gbs%(c.Training.MicroBatchSize*dp) != 0 {
		return c, fmt.Sprintf("global batch %d not divisible by micro-batch·dp", gbs), false
	}
	if c.Training.MicroBatchSize != cfg.Training.MicroBatchSize {
		note = fmt.Sprintf("micro-batch %d to keep global batch %d", c.Training.MicroBatchSize, gbs)
	}
	return c, note, true
}

// describeChange lists, briefly, what differs between two resolved configurations in layout and batching.
func describeChange(from, to Config) string {
	a, b := from.Parallel, to.Parallel
	var out []string
	num := func(name string, x, y int) {
		if x != y {
			out = append(out, fmt.Sprintf("%s %d→%d", name, x, y))
		}
	}
	onOff := func(name string, x, y bool) {
		if x != y {
			state := "off"
			if y {
				state = "on"
			}
			out = append(out, name+" "+state)
		}
	}
	num("TP", a.TP, b.TP)
	num("PP", a.PP, b.PP)
	num("DP", a.DP, b.DP)
	num("EP", a.EP, b.EP)
	num("virtual stages", a.VirtualStages, b.VirtualStages)
	onOff("sequence parallelism", a.SequenceParallel, b.SequenceParallel)
	num("ZeRO stage", a.ZeroStage, b.ZeroStage)
	onOff("distributed optimizer", a.DistributedOptimizer, b.DistributedOptimizer)
	if a.GradBuffer != b.GradBuffer {
		out = append(out, fmt.Sprintf("gradient buffer %s→%s", a.GradBuffer, b.GradBuffer))
	}
	num("micro-batch", from.Training.MicroBatchSize, to.Training.MicroBatchSize)
	num("micro-batches per step", a.NumMicrobatches, b.NumMicrobatches)
	num("global batch", from.Training.GlobalBatchSize, to.Training.GlobalBatchSize)
	return strings.Join(out, ", ")
}

// largestDivisor is the largest k ≤ limit dividing n for which ok holds, or 1.
func largestDivisor(n, limit int, ok func(int) bool) int {
	for k := limit; k > 1; k-- {
		if n%k == 0 && ok(k) {
			return k
		}
	}
	return 1
}

// strategyTP is the tensor-parallel size the strategy table and the recommendations try: the largest within a
// node that divides the GPUs, the heads and the FFN width.
func strategyTP(cfg *Config) int {
	n := cfg.Hardware.NumGPUs
	return largestDivisor(n, min(n, cfg.Hardware.GPUsPerNode), func(k int) bool {
		return cfg.Model.NumAttentionHeads%k == 0 && cfg.Model.FFNHiddenSize%k == 0
	})
}

func tpStrategy(tp, pp int, fsdp bool) strategy {
	switch {
	case pp > 1:
		return strategy{fmt.Sprintf("TP%d×PP%d+SP", tp, pp), tp, pp, 1, true, true}
	case fsdp:
		return strategy{fmt.Sprintf("TP%d+SP+FSDP", tp), tp, 1, 3, false, true}
	}
	return strategy{fmt.Sprintf("TP%d+SP", tp), tp, 1, 1, true, true}
}

// zeroStrategy shards one more level of model state; ZeRO-1 is the distributed optimizer (Megatron's form of it),
// as in the strategy table.
func zeroStrategy(cfg *Config, stage int) strategy {
	names := []string{"DDP", "DP+ZeRO-1", "DP+ZeRO-2", "FSDP (ZeRO-3)"}
	name := names[stage]
	if cfg.Parallel.TP > 1 || cfg.Parallel.PP > 1 {
		name = fmt.Sprintf("ZeRO-%d with TP%d, PP%d", stage, cfg.Parallel.TP, cfg.Parallel.PP)
	}
	sp := cfg.Parallel.SequenceParallel && cfg.Parallel.TP > 1
	return strategy{name, cfg.Parallel.TP, cfg.Parallel.PP, stage, stage == 1, sp}
}

// CompareStrategies evaluates DP, ZeRO-1/2/3, TP, PP and hybrids on the same GPUs and global batch.
func CompareStrategies(ctx context.Context, cfg Config) ([]StrategyRow, error) {
	if err := cfg.Resolve(); err != nil {
		return nil, err
	}
	if cfg.Mode != "train" {
		return nil, nil
	}
	n := cfg.Hardware.NumGPUs
	tp := strategyTP(&cfg)
	pp := largestDivisor(n, min(n, 16), func(k int) bool { return cfg.Model.NumLayers%k == 0 })
	flat := cfg
	flat.Parallel.TP, flat.Parallel.PP, flat.Parallel.SequenceParallel = 1, 1, false
	cands := []strategy{
		{"as configured", cfg.Parallel.TP, cfg.Parallel.PP, cfg.Parallel.ZeroStage, cfg.Parallel.DistributedOptimizer, cfg.Parallel.SequenceParallel},
		zeroStrategy(&flat, 0), zeroStrategy(&flat, 1), zeroStrategy(&flat, 2), zeroStrategy(&flat, 3),
	}
	if tp > 1 {
		cands = append(cands, tpStrategy(tp, 1, false), tpStrategy(tp, 1, true))
	}
	if pp > 1 {
		cands = append(cands, strategy{fmt.Sprintf("PP%d", pp), 1, pp, 1, true, false})
	}
	if tp > 1 && n/tp > 1 {
		p2 := largestDivisor(n/tp, min(n/tp, 16), func(k int) bool { return cfg.Model.NumLayers%k == 0 })
		if p2 > 1 {
			cands = append(cands, tpStrategy(tp, p2, false))
		}
	}
	var rows []StrategyRow
	for _, cd := range cands {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		row := StrategyRow{Name: cd.name, TP: cd.tp, PP: cd.pp, ZeroStage: cd.zero, SP: cd.sp}
		c, note, ok := strategyConfig(cfg, cd)
		row.Note = note
		if !ok {
			rows = append(rows, row)
			continue
		}
		// A row needs the memory and the step time only; Estimate's roofline and recommendations (which
		// re-estimate several variants each) would be thrown away.
		r, err := estimateCore(c)
		if err != nil {
			row.Note = err.Error()
			rows = append(rows, row)
			continue
		}
		row.DP = r.Config.Parallel.DP
		row.PeakBytes, row.DeviceBytes, row.Fits = r.Summary.PeakMemoryBytes, r.Summary.DeviceTotalBytes, r.Fit.Fits
		if t := estimateTime(r, &r.Config); t != nil {
			row.StepSeconds, row.TokensPerSec, row.CommFraction = t.StepSeconds, t.TokensPerSecond, t.CommFraction
		}
		rows = append(rows, row)
	}
	return rows, nil
}

// recommend derives advice by re-estimating variants of the config, so every number is a prediction.
func recommend(r *Report) []Recommendation {
	c := r.Config
	base := r.Summary.DeviceTotalBytes
	fits := r.Fit.Fits
	var out []Recommendation
	// layout re-estimates a parallel layout built exactly as the strategy table builds its rows.
	layout := func(st strategy) *Report {
		v, _, ok := strategyConfig(c, st)
		if !ok {
			return nil
		}
		nr, err := estimateCore(v)
		if err != nil {
			return nil
		}
		return nr
	}
	variant := func(mod func(*Config)) *Report {
		v := c
		mod(&v)
		nr, err := estimateCore(v)
		if err != nil {
			return nil
		}
		return nr
	}
	sev := func(nr *Report, gain int64) string {
		switch {
		case !fits && nr.Fit.Fits:
			return "critical"
		case !fits:
			return "high"
		case float64(gain) > 0.1*float64(base):
			return "medium"
		}
		return "info"
	}
	add := func(title, what string, nr *Report, min float64) {
		if nr == nil {
			return
		}
		gain := base - nr.Summary.DeviceTotalBytes
		if float64(gain) < min*float64(base) || gain <= 0 {
			return
		}
		fit := "still does not fit"
		if nr.Fit.Fits {
			fit = "fits with " + units.Bytes(nr.Fit.HeadroomBytes) + " headroom"
		}
		if ch := describeChange(c, nr.Config); ch != "" {
			what += " (" + ch + ")"
		}
		out = append(out, Recommendation{Severity: sev(nr, gain), Title: title,
			Detail:     fmt.Sprintf("%s: per-GPU need %s → %s (−%s, %.0f%%); %s.", what, units.Bytes(base), units.Bytes(nr.Summary.DeviceTotalBytes), units.Bytes(gain), 100*float64(gain)/float64(base), fit),
			SavesBytes: gain, NewPeakBytes: nr.Summary.DeviceTotalBytes})
	}
	if c.Mode == "train" {
		if c.Training.Attention == "standard" {
			add("Enable flash attention", fmt.Sprintf("the s×s score matrices (s=%d) dominate; flash attention keeps O(s) memory", c.Training.SeqLength),
				variant(func(v *Config) { v.Training.Attention = "flash" }), 0.02)
			if c.Training.Recompute == "none" {
				add("Selective activation recomputation", "recompute only QKᵀ/softmax/dropout (the 5as/h term)",
					variant(func(v *Config) { v.Training.Recompute = "selective" }), 0.02)
			}
		}
		if c.Training.Recompute != "full" && !fits || c.Training.Recompute == "none" && r.Summary.ActivationMemoryBytes > r.Summary.PersistentMemoryBytes {
			add("Full activation recomputation", "keep only each layer's input (≈ +33% compute)",
				variant(func(v *Config) { v.Training.Recompute = "full" }), 0.05)
		}
		if c.Training.Loss == "standard" {
			add("Chunked / fused cross-entropy", fmt.Sprintf("the full-vocabulary logits (V=%d) and their fp32 gradients are materialized", c.Model.VocabSize),
				variant(func(v *Config) { v.Training.Loss = "chunked" }), 0.03)
		}
		if c.Parallel.DP*c.Parallel.CP > 1 && c.Parallel.ZeroStage < 3 {
			next := c.Parallel.ZeroStage + 1
			st := zeroStrategy(&c, next)
			add(fmt.Sprintf("Shard more model state (ZeRO-%d)", next), fmt.Sprintf("shard over the %d data-parallel ranks, as strategy %q", c.Parallel.DP*c.Parallel.CP, st.name),
				layout(st), 0.03)
		}
		if t := strategyTP(&c); !fits && c.Parallel.TP == 1 && t > 1 {
			pp := 1
			if c.Parallel.PP > 1 && (c.Hardware.NumGPUs/t)%c.Parallel.PP == 0 {
				pp = c.Parallel.PP
			}
			st := tpStrategy(t, pp, pp == 1 && c.Parallel.ZeroStage == 3)
			add(fmt.Sprintf("Tensor parallelism TP=%d with sequence parallelism", t), fmt.Sprintf("split weights and activations inside the node, as strategy %q with the same global batch", st.name),
				layout(st), 0.02)
		}
		if !fits && c.Training.MicroBatchSize > 1 {
			add("Smaller micro-batch with gradient accumulation", fmt.Sprintf("same global batch %d via accumulation", c.Training.GlobalBatchSize),
				variant(func(v *Config) {
					v.Training.MicroBatchSize, v.Parallel.NumMicrobatches = 1, 0
				}), 0.02)
		}
		if c.Training.OptimizerImpl == "foreach" && r.Summary.PeakStage == "optimizer_step" {
			add("Fused optimizer step", "the foreach AdamW intermediates set the peak",
				variant(func(v *Config) { v.Training.OptimizerImpl = "fused" }), 0.01)
		}
	}
	if !c.Allocator.ExpandableSegments {
		add("PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True", "less fragmentation of the reserved pool",
			variant(func(v *Config) { v.Allocator.ExpandableSegments = true }), 0.02)
	}
	if fits && r.Fit.HeadroomBytes > base/5 {
		if mb, err := MaxBatchSize(context.Background(), c); err == nil && mb.Max > batchOf(&c) {
			out = append(out, Recommendation{Severity: "info", Title: "Headroom for a larger batch",
				Detail: fmt.Sprintf("%s headroom; %s up to %d fits (%s per GPU).", units.Bytes(r.Fit.HeadroomBytes), mb.Parameter, mb.Max, units.Bytes(mb.DeviceBytes))})
		}
	}
	if !fits && len(out) == 0 {
		out = append(out, Recommendation{Severity: "critical", Title: "Does not fit",
			Detail: "short by " + units.Bytes(-r.Fit.HeadroomBytes) + " per GPU; more GPUs (sharding), a larger GPU or a smaller model is needed."})
	}
	return out
}

func batchOf(c *Config) int {
	if c.Mode == "inference" {
		return c.Inference.BatchSize
	}
	return c.Training.MicroBatchSize
}
