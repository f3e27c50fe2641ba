package static

import (
	"fmt"
	"math"
	"slices"
)

// LoRA and QLoRA as PEFT runs them (peft/tuners/lora/layer.py Linear.forward; bitsandbytes nn.Linear4bit and
// autograd MatMul4Bit):
//   - the base is frozen: its linears keep nothing for backward (a frozen weight needs no input), norms with
//     frozen weights keep only what the input gradient needs, embeddings and the output layer get no gradient;
//   - each adapter computes lora_B(lora_A(dropout(x))) · scaling after casting x to the adapter dtype
//     (_cast_input_dtype): with fp32 adapters on a 16-bit base every adapted linear keeps an fp32 copy of its
//     input, with matching dtypes the adapters share the input itself; lora_A's r-wide output is kept for lora_B;
//     dropout > 0 keeps its own output and a bool mask per adapter;
//   - the sum result + adapter runs in fp32 when the adapters are fp32 (a transient out-wide fp32 tensor);
//   - adapter weights, gradients and AdamW states are in adapter_dtype (PEFT's autocast_adapter_dtype upcasts
//     16-bit adapters to fp32 by default);
//   - NF4 stores 4-bit codes plus one absmax per 64 weights (fp32, or with double quantization 8-bit absmax and
//     one fp32 per 256 blocks); forward and backward dequantize one weight at a time to the compute dtype.

// loraTargets returns the names among candidates that carry adapters.
func (e *est) loraTargets(candidates []string) []bool {
	out := make([]bool, len(candidates))
	for i, n := range candidates {
		out[i] = slices.Contains(e.lora.Targets, n)
	}
	return out
}

// loraOp records the adapters on the linears named names, which read the same input (rows × inCols of dtype
// inDtype); outCols are their output widths. inputSaved says another op already keeps that input.
func (e *est) loraOp(prefix string, rows, inCols int64, inDtype string, inputSaved bool, outCols []int64, names []string) []Operator {
	on := e.loraTargets(names)
	l := e.lora
	ad := dtypeBytes[l.AdapterDtype]
	r := int64(l.Rank)
	in := float64(rows * inCols)
	var saved, temp float64
	var targets []string
	shared := false
	for i, ok := range on {
		if !ok {
			continue
		}
		targets = append(targets, names[i])
		switch {
		case l.Dropout > 0:
			saved += in*ad + in // dropped copy in the adapter dtype + bool mask
		case l.AdapterDtype != inDtype:
			saved += in * ad // x.to(adapter dtype), one copy per adapter
		default:
			shared = true // lora_A keeps x itself
		}
		saved += float64(rows*r) * ad // lora_A output, kept by lora_B
		if ad > dtypeBytes[inDtype] {
			temp = math.Max(temp, float64(rows*outCols[i])*ad) // result + adapter promoted to the adapter dtype
		}
	}
	if len(targets) == 0 {
		return nil
	}
	if shared && !inputSaved {
		saved += in * dtypeBytes[inDtype]
	}
	formula := fmt.Sprintf("per adapter: input as %s (%g B) + b·s·r·%g B", l.AdapterDtype, ad, ad)
	if l.Dropout > 0 {
		formula = fmt.Sprintf("per adapter: dropped input %g B + mask 1 B per element + b·s·r·%g B", ad, ad)
	}
	return []Operator{{Name: prefix + ".lora", Category: "lora", Phase: "forward",
		Inputs:      []Tensor{tensor(prefix+".lora.in", inDtype, rows, inCols)},
		Outputs:     []Tensor{tensor(prefix+".lora_A.out", l.AdapterDtype, rows, r)},
		MemoryBytes: int64(saved), TempBytes: int64(temp), Formula: formula,
		Notes: fmt.Sprintf("LoRA r=%d on %v (adapters %s)", l.Rank, targets, l.AdapterDtype),
		FLOPs: 2 * in * float64(r) * float64(len(targets)), Extra: map[string]any{"targets": targets}}}
}

// loraLayerParams lists one layer's adapter matrices (A: r × in, B: out × r).
func (e *est) loraLayerParams() []paramTensor {
	x := e.x
	r := int64(e.lora.Rank)
	proj := map[string][2]int64{ // name -> (in, out)
		"q_proj": {x.h, x.a * x.d}, "k_proj": {x.h, x.g * x.d}, "v_proj": {x.h, x.g * x.d}, "o_proj": {x.a * x.d, x.h},
	}
	experts := max(1, x.E)
	if x.gated {
		proj["gate_proj"], proj["up_proj"], proj["down_proj"] = [2]int64{x.h, x.fe}, [2]int64{x.h, x.fe}, [2]int64{x.fe, x.h}
	} else {
		proj["up_proj"], proj["down_proj"] = [2]int64{x.h, x.fe}, [2]int64{x.fe, x.h}
	}
	// Phi-3's fused projections carry one adapter each: A reads the input once, B writes every output.
	proj["qkv_proj"], proj["gate_up_proj"] = [2]int64{x.h, (x.a + 2*x.g) * x.d}, [2]int64{x.h, 2 * x.fe}
	var ps []paramTensor
	for _, n := range append(loraProjections, "qkv_proj", "gate_up_proj") {
		io, ok := proj[n]
		if !ok || !slices.Contains(e.lora.Targets, n) {
			continue
		}
		mult := int64(1)
		if n == "gate_proj" || n == "up_proj" || n == "down_proj" || n == "gate_up_proj" {
			mult = experts
		}
		ps = append(ps, paramTensor{"lora." + n + ".A", []int64{mult * r, io[0]}, replicated},
			paramTensor{"lora." + n + ".B", []int64{mult * io[1], r}, replicated})
	}
	return ps
}

// frozenWeightBytes is the stored size of one frozen base parameter: linear weights of the layers in the
// quantized format (bitsandbytes skips the output layer), everything else in its 16-bit dtype.
func (e *est) frozenWeightBytes(p paramTensor, inLayer bool) float64 {
	l := e.lora
	el := float64(p.numel())
	base := l.BaseDtype
	if base == "nf4" || base == "int8" {
		if !inLayer || !p.matrix() {
			if e.kbitPrep() {
				return el * 4 // prepare_model_for_kbit_training upcasts what is not quantized to fp32
			}
			return el * dtypeBytes[e.c.paramDtype()]
		}
		if base == "nf4" {
			return el*0.5 + e.quantStatsBytes(p, inLayer)
		}
		return el + 4*float64(p.Shape[0]) // int8 codes + one fp32 scale per output row
	}
	return el * dtypeBytes[base]
}

// quantStatsBytes is the part of a frozen NF4 weight that is its quantization statistics (bitsandbytes'
// QuantState): one absmax per 64 weights, fp32, or with double quantization an 8-bit absmax and one fp32 per
// 256 blocks; 0 for what is not quantized.
func (e *est) quantStatsBytes(p paramTensor, inLayer bool) float64 {
	if e.lora.BaseDtype != "nf4" || !inLayer || !p.matrix() {
		return 0
	}
	absmax := 4.0 / 64
	if *e.lora.DoubleQuant {
		absmax = 1.0/64 + 4.0/(64*256)
	}
	return float64(p.numel()) * absmax
}

// quantStatsAlloc allocates one weight's QuantState as bitsandbytes' quantize_4bit leaves it on the GPU
// (functional.py): the NF4 code table (16 fp32), then with double quantization the offset (an fp32 scalar,
// absmax.mean()) and quantize_blockwise's fp32 absmax per 256 blocks and its uint8 codes, one per block of 64
// weights; without, the fp32 absmax per block. Its sizes add up to quantStatsBytes up to the rounding of
// partial blocks and the code table.
func (e *est) quantStatsAlloc(s *seqBuilder, p paramTensor, inLayer bool) {
	if e.quantStatsBytes(p, inLayer) == 0 {
		return
	}
	blocks := (p.numel() + 63) / 64
	s.alloc(16 * 4)
	if !*e.lora.DoubleQuant {
		s.alloc(blocks * 4)
		return
	}
	s.alloc(4)
	s.alloc((blocks + 255) / 256 * 4)
	s.alloc(blocks)
}

// quantStatsWhole reports bitsandbytes weights under ZeRO-3 or FSDP, whose quantization statistics stay whole
// on every GPU. For a model that FSDP or ZeRO-3 will shard, transformers quantizes each weight on the GPU and
// then moves only its data to the CPU (modeling_utils, _load_state_dict_into_meta_model: "quantize the
// parameter on the GPU and then cast it to CPU"); bitsandbytes' Params4bit._quantize keeps the QuantState as
// an attribute of the parameter and of its Linear4bit (module.quant_state), which Linear4bit.forward puts back
// on the flattened weight ("the quant state got lost when the parameter got converted. This happens for
// example for fsdp"). FSDP's flat parameters and ZeRO-3's partitions hold only the packed codes, so the
// statistics are neither sharded nor offloaded. torchao's NF4Tensor (torchtune) carries its scalers inside the
// tensor that FSDP2 shards.
func (e *est) quantStatsWhole() bool {
	return e.lora != nil && e.lora.BaseDtype == "nf4" && e.c.Parallel.ZeroStage == 3 && e.c.Framework != "torchtune"
}

// loraStates is modelStates for LoRA training: frozen base weights plus adapter weights, gradients and AdamW
// states (no master copy: the adapters train in their own dtype).
func (e *est) loraStates(ps []paramTensor, mult float64, inLayer bool) modelStates {
	var ms modelStates
	// ZeRO shards what it shards of full training: parameters at stage 3, gradients from 2, states from 1.
	zero := e.c.Parallel.ZeroStage
	div := func(from int) float64 {
		if zero >= from {
			return float64(e.nDense)
		}
		return 1
	}
	for _, p := range ps {
		ms.params += float64(p.numel()) * mult
		w := e.frozenWeightBytes(p, inLayer) * mult
		if e.quantStatsWhole() {
			stats := e.quantStatsBytes(p, inLayer) * mult
			ms.weights += (w-stats)/div(3) + stats
			ms.wholeStats += stats
		} else {
			ms.weights += w / div(3)
		}
		ms.largestWeightPerGPU = math.Max(ms.largestWeightPerGPU, w/mult)
	}
	if !inLayer {
		return ms
	}
	ad := dtypeBytes[e.lora.AdapterDtype]
	adapters := e.adaptersPerLayer() * mult
	ms.adapterParams = adapters
	ms.weights += adapters * ad / div(3)
	ms.grads = adapters * ad / div(2)
	switch e.c.Training.Optimizer {
	case "adamw":
		ms.opt = 2 * ad * adapters
	case "adamw-8bit":
		ms.opt = 2*adapters + adapters/2048*8
	case "sgd":
		ms.opt = ad * adapters
	case "adafactor":
		ms.opt = ad * adapters // factored rows+columns of r-wide matrices ≈ one value per element at most
	}
	ms.opt /= div(1)
	return ms
}

// adaptersPerLayer is the number of trainable adapter parameters in one decoder layer.
func (e *est) adaptersPerLayer() float64 {
	var n float64
	for _, p := range e.loraLayerParams() {
		n += float64(p.numel())
	}
	return n
}

// dequantTemp is the largest weight dequantized to the compute dtype at once (forward and backward of a
// bitsandbytes layer), 0 for an unquantized base.
func (e *est) dequantTemp(layerPs []paramTensor) float64 {
	if e.lora == nil || (e.lora.BaseDtype != "nf4" && e.lora.BaseDtype != "int8") {
		return 0
	}
	var m float64
	for _, p := range layerPs {
		if p.matrix() {
			m = math.Max(m, float64(p.numel())*e.ab)
		}
	}
	return m
}

// weightCopyOps are the per-layer weight casts kept for backward: autocast's 16-bit copy of every matmul
// weight (cached for the forward and saved by the matmul) and torchao float8's fp8 weight cast (tensorwise
// scaling, not under FSDP's float8 all-gather).
func (e *est) weightCopyOps() []Operator {
	c := e.c
	var matmul float64
	for _, p := range layerParams(e.x) {
		if p.matrix() && p.Class != replicated {
			matmul += e.perGPU(p)
		}
	}
	var ops []Operator
	if c.amp() {
		ops = append(ops, Operator{Name: "autocast_weight_copies", Category: "weights", Phase: "forward",
			MemoryBytes: int64(matmul * e.ab), Formula: "matmul params/GPU × 2 B",
			Notes: "torch.autocast caches the 16-bit copy of each fp32 weight for the forward; the matmul keeps it for backward"})
	}
	if c.Training.Float8 && c.Parallel.ZeroStage != 3 {
		ops = append(ops, Operator{Name: "float8_weight_copies", Category: "weights", Phase: "forward",
			MemoryBytes: int64(matmul), Formula: "matmul params/GPU × 1 B",
			Notes: "float8 linears keep the fp8 weight cast for the input gradient"})
	}
	return ops
}

// kbitPrep reports PEFT's prepare_model_for_kbit_training (peft/utils/other.py): every 16-bit parameter that
// bitsandbytes did not quantize — embeddings, norms, the output layer — becomes fp32. The embedding then
// returns fp32 hidden states and the fp32 norm weights keep the residual stream in fp32 (hidden + 16-bit
// projection outputs promote), so checkpointed layer inputs are 4 bytes an element; under the Trainer's
// bf16 autocast the output layer runs on a 16-bit cast of its fp32 weight, which its matmul keeps for the
// input gradient.
func (e *est) kbitPrep() bool {
	return e.lora != nil && e.lora.KbitPrep != nil && *e.lora.KbitPrep
}
