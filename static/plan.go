package static

import (
	"context"
	"fmt"
)

// fitsWith reports whether cfg fits, with its device total; configs that fail validation do not fit.
func fitsWith(cfg Config) (bool, *Report) {
	r, err := estimateCore(cfg)
	if err != nil {
		return false, nil
	}
	return r.Fit.Fits, r
}

// search finds the largest v in step multiples (v = k·step, 1 ≤ k) for which set(v) fits, doubling then
// bisecting; limit caps v.
func search(ctx context.Context, base Config, step, limit int, set func(*Config, int)) (int, *Report, error) {
	try := func(v int) (bool, *Report) {
		c := base
		set(&c, v)
		return fitsWith(c)
	}
	ok, rep := try(step)
	if !ok {
		return 0, rep, nil
	}
	lo, hi := 1, 2
	best := rep
	for hi*step <= limit {
		if err := ctx.Err(); err != nil {
			return 0, nil, err
		}
		ok, r := try(hi * step)
		if !ok {
			break
		}
		lo, best = hi, r
		hi *= 2
	}
	if hi*step > limit {
		hi = limit/step + 1
	}
	for hi-lo > 1 {
		if err := ctx.Err(); err != nil {
			return 0, nil, err
		}
		mid := (lo + hi) / 2
		if ok, r := try(mid * step); ok {
			lo, best = mid, r
		} else {
			hi = mid
		}
	}
	return lo * step, best, nil
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
	v, r, err := search(ctx, base, 1, 1<<16, set)
	if err != nil {
		return nil, err
	}
	res := &SearchResult{Parameter: param, Max: v}
	if r != nil {
		res.PeakBytes, res.DeviceBytes = r.Summary.PeakMemoryBytes, r.Summary.DeviceTotalBytes
	}
	if v == 0 {
		res.Note = "even batch 1 does not fit"
	}
	return res, nil
}

// MaxSeqLength finds the longest sequence (training) or prompt (inference) that fits, in multiples that keep
// context and sequence parallelism valid.
func MaxSeqLength(ctx context.Context, cfg Config) (*SearchResult, error) {
	if err := cfg.Resolve(); err != nil {
		return nil, err
	}
	step := 256
	for _, m := range []int{2 * cfg.Parallel.CP, cfg.Parallel.TP} {
		step = lcm(step, m)
	}
	param := "training.seq_length"
	set := func(c *Config, v int) {
		c.Training.SeqLength = v
		if c.Model.PositionEmbedding == "learned" && c.Model.MaxPositionEmbeddings < v {
			c.Model.MaxPositionEmbeddings = v
		}
	}
	if cfg.Mode == "inference" {
		param, step = "inference.prompt_length", 256
		set = func(c *Config, v int) { c.Inference.PromptLength = v }
	}
	v, r, err := search(ctx, cfg, step, 1<<22, set)
	if err != nil {
		return nil, err
	}
	res := &SearchResult{Parameter: param, Max: v}
	if r != nil {
		res.PeakBytes, res.DeviceBytes = r.Summary.PeakMemoryBytes, r.Summary.DeviceTotalBytes
	}
	if v == 0 {
		res.Note = fmt.Sprintf("even %d tokens do not fit", step)
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

// CompareStrategies evaluates DP, ZeRO-1/2/3, TP, PP and hybrids on the same GPUs and global batch.
func CompareStrategies(ctx context.Context, cfg Config) ([]StrategyRow, error) {
	if err := cfg.Resolve(); err != nil {
		return nil, err
	}
	if cfg.Mode != "train" {
		return nil, nil
	}
	n := cfg.Hardware.NumGPUs
	gbs := cfg.Training.GlobalBatchSize
	heads := cfg.Model.NumAttentionHeads
	type cand struct {
		name         string
		tp, pp, zero int
		distOpt, sp  bool
	}
	largestDiv := func(limit int, ok func(int) bool) int {
		for k := limit; k > 1; k-- {
			if n%k == 0 && ok(k) {
				return k
			}
		}
		return 1
	}
	tp := largestDiv(min(n, cfg.Hardware.GPUsPerNode), func(k int) bool {
		return heads%k == 0 && cfg.Model.FFNHiddenSize%k == 0
	})
	pp := largestDiv(min(n, 16), func(k int) bool { return cfg.Model.NumLayers%k == 0 })
	cands := []cand{
		{"as configured", cfg.Parallel.TP, cfg.Parallel.PP, cfg.Parallel.ZeroStage, cfg.Parallel.DistributedOptimizer, cfg.Parallel.SequenceParallel},
		{"DDP", 1, 1, 0, false, false},
		{"DP+ZeRO-1", 1, 1, 1, true, false},
		{"DP+ZeRO-2", 1, 1, 2, false, false},
		{"FSDP (ZeRO-3)", 1, 1, 3, false, false},
	}
	if tp > 1 {
		cands = append(cands, cand{fmt.Sprintf("TP%d+SP", tp), tp, 1, 1, true, true})
		cands = append(cands, cand{fmt.Sprintf("TP%d+SP+FSDP", tp), tp, 1, 3, false, true})
	}
	if pp > 1 {
		cands = append(cands, cand{fmt.Sprintf("PP%d", pp), 1, pp, 1, true, false})
	}
	if tp > 1 && n/tp > 1 {
		p2 := largestDiv(min(n/tp, 16), func(k int) bool { return cfg.Model.NumLayers%k == 0 && (n/tp)%k == 0 })
		if p2 > 1 {
			cands = append(cands, cand{fmt.Sprintf("TP%d×PP%d+SP", tp, p2), tp, p2, 1, true, true})
		}
	}
	var rows []StrategyRow
	for _, cd := range cands {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		c := cfg
		c.Parallel.TP, c.Parallel.PP, c.Parallel.ZeroStage = cd.tp, cd.pp, cd.zero
		c.Parallel.DistributedOptimizer, c.Parallel.SequenceParallel = cd.distOpt, cd.sp
		c.Parallel.DP, c.Parallel.NumMicrobatches, c.Parallel.ETP = 0, 0, 0
		c.Parallel.GradBuffer = "auto"
		if cd.pp == 1 {
			c.Parallel.VirtualStages, c.Parallel.PPSchedule = 1, "1f1b"
		} else if c.Parallel.VirtualStages > 1 && c.Model.NumLayers%(cd.pp*c.Parallel.VirtualStages) != 0 {
			c.Parallel.VirtualStages, c.Parallel.PPSchedule = 1, "1f1b"
		}
		if c.Parallel.EP > 1 && (n/cd.pp)%(c.Parallel.EP*cd.tp) != 0 {
			c.Parallel.EP = 1
		}
		row := StrategyRow{Name: cd.name, TP: cd.tp, PP: cd.pp, ZeroStage: cd.zero, SP: cd.sp}
		dp := n / (cd.tp * cd.pp * c.Parallel.CP)
		for dp > 0 && c.Training.MicroBatchSize > 1 && gbs%(c.Training.MicroBatchSize*dp) != 0 {
			c.Training.MicroBatchSize-- // keep the global batch: fewer samples per GPU per micro-batch
		}
		if dp > 0 && c.Training.MicroBatchSize != cfg.Training.MicroBatchSize {
			row.Note = fmt.Sprintf("micro-batch %d to keep global batch %d", c.Training.MicroBatchSize, gbs)
		}
		if dp == 0 || gbs%(c.Training.MicroBatchSize*dp) != 0 {
			row.Note = fmt.Sprintf("global batch %d not divisible by micro-batch·dp", gbs)
			rows = append(rows, row)
			continue
		}
		r, err := Estimate(c)
		if err != nil {
			row.Note = err.Error()
			rows = append(rows, row)
			continue
		}
		row.DP = r.Config.Parallel.DP
		row.PeakBytes, row.DeviceBytes, row.Fits = r.Summary.PeakMemoryBytes, r.Summary.DeviceTotalBytes, r.Fit.Fits
		if r.Time != nil {
			row.StepSeconds, row.TokensPerSec, row.CommFraction = r.Time.StepSeconds, r.Time.TokensPerSecond, r.Time.CommFraction
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
			fit = fmt.Sprintf("fits with %.2f GiB headroom", gibf(nr.Fit.HeadroomBytes))
		}
		out = append(out, Recommendation{Severity: sev(nr, gain), Title: title,
			Detail:     fmt.Sprintf("%s: per-GPU need %.2f → %.2f GiB (−%.2f GiB, %.0f%%); %s.", what, gibf(base), gibf(nr.Summary.DeviceTotalBytes), gibf(gain), 100*float64(gain)/float64(base), fit),
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
			add(fmt.Sprintf("Shard more model state (ZeRO-%d)", next), fmt.Sprintf("shard over the %d data-parallel ranks", c.Parallel.DP*c.Parallel.CP),
				variant(func(v *Config) { v.Parallel.ZeroStage = next }), 0.03)
		}
		if !fits && c.Parallel.TP == 1 && c.Hardware.NumGPUs > 1 {
			for _, t := range []int{8, 4, 2} {
				if c.Hardware.NumGPUs%t == 0 && c.Model.NumAttentionHeads%t == 0 && t <= c.Hardware.GPUsPerNode {
					add(fmt.Sprintf("Tensor parallelism TP=%d with sequence parallelism", t), "split weights and activations inside the node",
						variant(func(v *Config) {
							v.Parallel.TP, v.Parallel.SequenceParallel, v.Parallel.DP, v.Parallel.NumMicrobatches = t, true, 0, 0
							v.Training.GlobalBatchSize = 0
						}), 0.02)
					break
				}
			}
		}
		if !fits && c.Training.MicroBatchSize > 1 {
			add("Smaller micro-batch with gradient accumulation", fmt.Sprintf("micro-batch %d → 1, same global batch via accumulation", c.Training.MicroBatchSize),
				variant(func(v *Config) {
					v.Training.MicroBatchSize, v.Training.GlobalBatchSize, v.Parallel.NumMicrobatches = 1, 0, 0
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
				Detail: fmt.Sprintf("%.2f GiB headroom; %s up to %d fits (%.2f GiB per GPU).", gibf(r.Fit.HeadroomBytes), mb.Parameter, mb.Max, gibf(mb.DeviceBytes))})
		}
	}
	if !fits && len(out) == 0 {
		out = append(out, Recommendation{Severity: "critical", Title: "Does not fit",
			Detail: fmt.Sprintf("short by %.2f GiB per GPU; more GPUs (sharding), a larger GPU or a smaller model is needed.", gibf(-r.Fit.HeadroomBytes))})
	}
	return out
}

func batchOf(c *Config) int {
	if c.Mode == "inference" {
		return c.Inference.BatchSize
	}
	return c.Training.MicroBatchSize
}
