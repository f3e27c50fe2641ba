package categorize

import (
	"testing"
)

// TestOptimizerCodeBySegment checks that optimizer code is recognised by whole path segments and names: the
// optimizers of torch and the common libraries are, and paths that merely contain "optim" or "adam" inside a
// word are not.
func TestOptimizerCodeBySegment(t *testing.T) {
	tests := []struct {
		frame string
		want  bool
	}{
		{sp + "torch/optim/adamw.py:154:_init_group", true},
		{sp + "torch/distributed/optim/zero_redundancy_optimizer.py:1000:step", true},
		{sp + "bitsandbytes/optim/optimizer.py:300:init_state", true},
		{sp + "apex/optimizers/fused_adam.py:150:step", true},
		{sp + "deepspeed/ops/adam/fused_adam.py:120:step", true},
		{sp + "transformers/optimization.py:700:step", true},
		{sp + "timm/optim/lamb.py:120:step", true},
		{user + "optimizers/muon.py:40:step", true},
		{user + "muon.py:40:zeropower_via_newtonschulz5", true},
		{user + "distributed_shampoo.py:40:step", true},
		{user + "train.py:10:_init_group", true},
		// Substring look-alikes: the training loop of Lightning, and words that contain the letters.
		{sp + "lightning/pytorch/loops/optimization/automatic.py:319:_training_step", false},
		{sp + "pytorch_lightning/loops/optimization/closure.py:40:closure", false},
		{user + "optimization_utils.py:5:helper", false},
		{user + "models/madame_net.py:5:forward", false},
		{user + "models/rnn.py:5:init_state", false},
		{user + "kernels/fused.py:5:_fused_rms_norm", false},
	}
	r := Default()
	for _, tc := range tests {
		t.Run(tc.frame, func(t *testing.T) {
			v := viewOf(&fr(tc.frame)[0])
			got := false
			for i := range r.rules {
				if r.rules[i].category == OptimizerState && r.rules[i].match(&v) {
					got = true
				}
			}
			if got != tc.want {
				t.Errorf("matched by an optimizer rule: %v, want %v", got, tc.want)
			}
		})
	}
}
