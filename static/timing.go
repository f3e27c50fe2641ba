package static

import "math"

// estimateTime predicts step time from FLOPs at an assumed utilization plus communication from interconnect
// bandwidth, then tokens/s, steps, hours and cost.
func estimateTime(r *Report, c *Config) *TimeEstimate {
	if c.Mode != "train" {
		return nil
	}
	e := newEst(c)
	x := e.x
	p := c.Parallel
	g := e.gpu
	te := &TimeEstimate{}
	s := float64(c.Training.SeqLength)
	// Model FLOPs per token: 6 per matmul parameter (forward 2, backward 4) plus causal attention
	// (QKᵀ and A·V: 4·s·a·d per layer forward, halved by the causal mask, ×3 with backward).
	attn := 3 * 4 * float64(x.L) * s * float64(x.a*x.d) * 0.5
	te.FLOPsPerToken = 6*float64(r.Params.Matmul) + attn
	hw := te.FLOPsPerToken
	switch c.Training.Recompute {
	case "full":
		hw += te.FLOPsPerToken / 3 // one more forward
	case "selective":
		hw += attn / 3
	}
	te.HardwareFLOPsPerToken = hw
	te.TokensPerStep = int64(c.Training.GlobalBatchSize) * int64(c.Training.SeqLength)
	peak := g.PeakTFLOPS(c.actDtype()) * 1e12
	gpus := float64(c.Hardware.NumGPUs)
	te.ComputeSeconds = float64(te.TokensPerStep) * hw / (gpus * peak * c.Hardware.MFU)
	m, v, pp := float64(p.NumMicrobatches), float64(p.VirtualStages), float64(p.PP)
	if pp > 1 {
		te.BubbleFraction = (pp - 1) / (v * m)
	}
	intra := g.IntraGBps / 2 * 1e9 * c.Hardware.CommEfficiency // vendors quote bidirectional
	inter := c.Hardware.InterNodeGBps * 1e9 * c.Hardware.CommEfficiency
	perNode := c.Hardware.GPUsPerNode
	bwFor := func(groupSize, stride int) float64 {
		if groupSize*stride > perNode {
			return inter
		}
		return intra
	}
	ab := e.ab
	tokensMB := float64(e.n) // tokens per micro-batch on one GPU (s/cp)
	layers := float64(e.layersPerStage)
	if t := float64(p.TP); t > 1 {
		// Two all-reduces (or reduce-scatter + all-gather pairs) per layer forward, two backward, one more pair
		// when the forward is recomputed; ring volume 2(t−1)/t of the activation.
		n := 4.0
		if c.Training.Recompute == "full" {
			n = 6
		}
		vol := 2 * (t - 1) / t * tokensMB * float64(x.h) * ab
		te.TPCommSeconds = n * vol / bwFor(p.TP, 1) * layers * m
	}
	if cp := float64(p.CP); cp > 1 {
		kv := tokensMB * float64(2*e.gL*x.d) * ab
		te.CPCommSeconds = 3 * (cp - 1) * kv / bwFor(p.CP, p.TP) * layers * m * 0.5 // ring passes, half overlapped
	}
	if pp > 1 {
		te.PPCommSeconds = 2 * tokensMB * float64(x.h) * ab / float64(e.spDiv) / bwFor(p.PP, p.TP*p.CP) * m * v
	}
	if p.EP > 1 && x.E > 0 {
		ep := float64(p.EP)
		tok := tokensMB / float64(e.spDiv) * float64(x.k)
		te.EPCommSeconds = 4 * (ep - 1) / ep * tok * float64(x.h) * ab / bwFor(p.EP, p.TP) * layers * m
	}
	if dp := float64(p.DP * p.CP); dp > 1 {
		params := float64(r.Stages[r.WorstStage].Params)
		grads := params * e.gb
		if e.lora != nil && r.LoRA != nil {
			grads = float64(r.LoRA.AdapterParams) * dtypeBytes[e.lora.AdapterDtype] // the frozen base has no gradient
		}
		vol := 2 * (dp - 1) / dp * grads // all-reduce or reduce-scatter + all-gather
		if p.ZeroStage == 3 {
			gathered := params * e.pb
			if e.lora != nil {
				// A LoRA model is gathered as stored: the 16-bit base with its fp32 adapters.
				gathered = float64(r.Stages[r.WorstStage].Weights) * dp
			}
			vol += 2 * (dp - 1) / dp * gathered // parameters gathered in forward and backward
		}
		te.DPCommSeconds = vol / bwFor(p.DP*p.CP, p.TP*p.PP)
		te.DPExposedSeconds = math.Max(te.DPCommSeconds*(1-c.Hardware.DPOverlap), te.DPCommSeconds-te.ComputeSeconds)
	}
	comm := te.TPCommSeconds + te.CPCommSeconds + te.PPCommSeconds + te.EPCommSeconds + te.DPExposedSeconds
	te.StepSeconds = te.ComputeSeconds*(1+te.BubbleFraction) + comm
	te.TokensPerSecond = float64(te.TokensPerStep) / te.StepSeconds
	te.MFU = float64(te.TokensPerStep) * te.FLOPsPerToken / (te.StepSeconds * gpus * peak)
	te.CommFraction = comm / te.StepSeconds
	switch {
	case c.Training.TrainSteps > 0:
		te.Steps = int64(c.Training.TrainSteps)
	case c.Training.TrainTokens > 0:
		te.Steps = int64(math.Ceil(c.Training.TrainTokens / float64(te.TokensPerStep)))
	}
	if te.Steps > 0 {
		te.TotalHours = float64(te.Steps) * te.StepSeconds / 3600
		te.GPUHours = te.TotalHours * gpus
		te.Cost = te.GPUHours * c.Hardware.PricePerGPUHour
	}
	return te
}

// buildRoofline places one layer's operators (plus head and optimizer step) on the GPU roofline.
func buildRoofline(r *Report, c *Config) *Roofline {
	e := newEst(c)
	g := e.gpu
	dtype := c.actDtype()
	if c.Mode == "inference" {
		dtype = "bf16"
		if c.Inference.WeightDtype == "fp8" {
			dtype = "fp8"
		}
	}
	rf := &Roofline{GPU: g.Name, Dtype: dtype, PeakTFLOPS: g.PeakTFLOPS(dtype), BandwidthTBs: g.BandwidthTBs, RidgePoint: g.RidgePoint(dtype)}
	add := func(name, phase string, flops, bytes, calls float64) {
		if flops <= 0 || bytes <= 0 {
			return
		}
		pt := RooflinePoint{Name: name, Phase: phase, FLOPs: flops, Bytes: bytes, Intensity: flops / bytes, CallsPerStep: calls}
		bw := g.BandwidthTBs * 1e12
		pk := rf.PeakTFLOPS * 1e12
		att := math.Min(pk, pt.Intensity*bw)
		pt.Attainable = att / 1e12
		pt.Utilization = att / pk
		pt.Bound = "compute"
		if pt.Intensity < rf.RidgePoint {
			pt.Bound = "memory"
		}
		pt.Seconds = math.Max(flops/pk, bytes/bw)
		rf.Points = append(rf.Points, pt)
	}
	seen := map[string]bool{}
	phase, passes, mbs := "forward", 3.0, float64(c.Parallel.NumMicrobatches)
	if c.Mode == "inference" {
		phase, passes, mbs = "prefill", 1, 1
	}
	layers := float64(e.layersPerStage)
	for _, op := range r.Operators {
		if op.FLOPs == 0 || seen[op.Name] || op.Phase == "persistent" {
			continue
		}
		seen[op.Name] = true
		ph, calls := op.Phase, passes*mbs
		if op.Layer >= 0 {
			calls *= layers
		}
		if ph == "optimizer_step" {
			calls = 1
		} else {
			ph = phase
		}
		add(op.Name, ph, op.FLOPs, op.BytesMoved, calls)
	}
	if c.Mode == "inference" && c.Inference.GenerateTokens > 0 {
		// One decode step: every weight is read once for b tokens; attention reads the whole KV cache.
		d := *c
		d.Inference.PromptLength = 1
		de := newEst(&d)
		ctx := float64(c.Inference.PromptLength + c.Inference.GenerateTokens)
		steps := layers * float64(c.Inference.GenerateTokens)
		for _, op := range de.layerOps() {
			if op.Name == "attention" {
				kv := 2 * float64(de.b) * ctx * float64(de.gL*de.x.d) * dtypeBytes[c.Inference.KVCache.Dtype]
				add("decode.attention", "decode", 4*float64(de.b)*ctx*float64(de.aL*de.x.d), kv+float64(sumBytes(op.Inputs...)), steps)
				continue
			}
			if op.FLOPs > 0 {
				add("decode."+op.Name, "decode", op.FLOPs, op.BytesMoved, steps)
			}
		}
	}
	var fl, at float64
	for _, p := range rf.Points {
		fl += p.FLOPs * p.CallsPerStep
		at += p.Seconds * p.CallsPerStep
	}
	if at > 0 {
		rf.PredictedUtil = fl / (at * rf.PeakTFLOPS * 1e12)
	}
	return rf
}
