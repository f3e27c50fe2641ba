package detect

import (
	"github.com/memscan/memscan/findings"
	"github.com/memscan/memscan/phases"
	"github.com/memscan/memscan/snapshot"
)

// layerMaxTensors and layerMaxPeriod bound the structure search: the first tensors of a model (a 70B model has
// about 720), and the tensors of one layer (a transformer block has a dozen, a MoE block a few hundred).
const (
	layerMaxTensors = 20000
	layerMaxPeriod  = 512
)

// ModelLayers counts the model's repeated layers from its structure, not from its allocation stacks: a model
// built on the CPU and moved with .to(device) allocates every parameter from one stack (module.py's _apply), so a
// stack's repetitions count tensors, not layers. The parameters, in the order they were allocated, repeat one
// layer's sizes once per layer: the run of a repeating size pattern that covers the most tensors (the shortest
// such pattern on a tie) gives the count. The setup's allocations before event until are read first; without a
// setup (history recorded after the model was built), the blocks live from before the trace, in address order.
// It returns 0 and "" when neither shows a pattern repeated at least twice; else the count and what it was read
// from, for the report.
func ModelLayers(d *Device, until int) (int, string) {
	var sizes []int64
	var bytes int64
	for i := 0; i < len(d.Trace) && i < until && len(sizes) < layerMaxTensors; i++ {
		if _, ph := d.Timeline().At(i); ph == phases.Setup && d.Trace[i].Action == snapshot.ActionAlloc {
			sizes = append(sizes, d.Trace[i].Size)
		}
	}
	from := findings.LayersFromSetup
	if len(sizes) == 0 {
		for i := range d.Elements {
			if el := &d.Elements[i]; el.Start < 0 && len(sizes) < layerMaxTensors {
				sizes = append(sizes, el.Size)
			}
		}
		from = findings.LayersFromLiveBlocks
	}
	period, reps, at := repeatedPattern(sizes)
	if reps < 2 {
		return 0, ""
	}
	for _, v := range sizes[at : at+period] {
		bytes += v
	}
	return reps, findings.LayersEvidence(from, period, reps, bytes)
}

// repeatedPattern finds, in sizes, the run of consecutive repetitions of one pattern that covers the most
// elements (at least two repetitions; the shortest pattern on a tie): its length, how many times it repeats and
// where the run starts.
func repeatedPattern(sizes []int64) (period, reps, at int) {
	best := 0
	for k := 1; k <= layerMaxPeriod && 2*k <= len(sizes); k++ {
		run := 0 // positions i with sizes[i] == sizes[i+k], consecutive
		for i := 0; i+k < len(sizes); i++ {
			if sizes[i] == sizes[i+k] {
				run++
			} else {
				run = 0
			}
			// A run of r matching positions ending at i is 1 + r/k repetitions of the k sizes starting at i+1−r.
			if r := 1 + run/k; r >= 2 && r*k > best {
				best, period, reps, at = r*k, k, r, i+1-run
			}
		}
	}
	return period, reps, at
}
