package categorize

import (
	"slices"
	"testing"

	"github.com/memscan/memscan/snapshot"
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

// Frames of a PyTorch Lightning training step, innermost first: Lightning runs the closure (training_step, forward,
// backward) inside optimizer.step, so every stack below carries torch/optim frames.
var (
	ltn          = sp + "lightning/pytorch/"
	lightningRun = fr(
		ltn+"loops/optimization/automatic.py:319:_training_step",
		ltn+"loops/optimization/automatic.py:131:closure",
		ltn+"loops/optimization/automatic.py:146:__call__",
		ltn+"plugins/precision/precision.py:109:_wrap_closure",
		sp+"torch/optim/adam.py:146:step",
		sp+"torch/optim/optimizer.py:76:_use_grad",
		sp+"torch/optim/optimizer.py:385:wrapper",
		ltn+"plugins/precision/precision.py:123:optimizer_step",
		ltn+"strategies/strategy.py:239:optimizer_step",
		ltn+"core/optimizer.py:154:step",
		ltn+"core/module.py:1302:optimizer_step",
		ltn+"trainer/call.py:171:_call_lightning_module_hook",
		ltn+"loops/optimization/automatic.py:270:_optimizer_step",
		ltn+"loops/training_epoch_loop.py:320:advance",
		ltn+"trainer/trainer.py:539:fit",
		user+"train.py:95:train",
	)
	// lightningStep is the part of lightningRun from the optimizer's step outwards.
	lightningStep = lightningRun[4:]
	// lightningClosure is the user's training_step called by the closure.
	lightningClosure = append(fr(user+"lit_module.py:105:training_step", ltn+"strategies/strategy.py:391:training_step",
		ltn+"trainer/call.py:323:_call_strategy_hook"), lightningRun...)
)

func stack(inner []snapshot.Frame, outer ...[]snapshot.Frame) []snapshot.Frame {
	out := slices.Clone(inner)
	for _, o := range outer {
		out = append(out, o...)
	}
	return out
}

// TestOptimizerStepCallbacks checks that an allocation made by the closure that optimizer.step runs (the forward
// and backward of Lightning's automatic optimization, or a user's LBFGS closure) is categorized by what the
// closure does, while the optimizer's own state init and step math stay Optimizer State.
func TestOptimizerStepCallbacks(t *testing.T) {
	tests := []struct {
		name                  string
		frames                []snapshot.Frame
		category, rule, frame string
		site                  string
	}{
		{
			name:     "lightning closure: user forward falls back to activation",
			frames:   stack(fr(user+"dit.py:21:modulate", user+"dit.py:125:forward", modCall, modWrap, user+"dit.py:249:forward", modCall), lightningClosure),
			category: Activation, rule: "forward-intermediate", frame: user + "dit.py:125:forward", site: user + "dit.py:21:modulate",
		},
		{
			name:     "lightning closure: torch linear inside a library forward",
			frames:   stack(fr(sp+"torch/nn/modules/linear.py:116:forward", modCall, modWrap, sp+"timm/models/vision_transformer.py:88:forward", modCall), lightningClosure),
			category: LinearMatMul, rule: "linear-files", frame: "torch/nn/modules/linear.py:116:forward", site: "timm/models/vision_transformer.py:88:forward",
		},
		{
			name: "lightning closure: backward",
			frames: stack(fr(sp+"torch/autograd/graph.py:825:_engine_run_backward", sp+"torch/autograd/__init__.py:347:backward",
				sp+"torch/_tensor.py:581:backward", ltn+"core/module.py:1090:backward", ltn+"plugins/precision/precision.py:73:backward",
				ltn+"strategies/strategy.py:213:backward", ltn+"loops/optimization/automatic.py:318:backward_fn"), lightningRun[1:]),
			category: Gradient, rule: "autograd-backward", frame: "torch/autograd/graph.py:825:_engine_run_backward", site: user + "train.py:95:train",
		},
		{
			name:     "lightning: adam state init stays optimizer state",
			frames:   stack(fr(sp+"torch/optim/adam.py:98:_init_group"), lightningStep),
			category: OptimizerState, rule: "torch-optim", frame: "torch/optim/adam.py:98:_init_group", site: user + "train.py:95:train",
		},
		{
			name:     "lightning: adamw step math stays optimizer state",
			frames:   stack(fr(sp+"torch/optim/adamw.py:520:_multi_tensor_adamw", sp+"torch/optim/optimizer.py:150:maybe_fallback", sp+"torch/optim/adamw.py:330:adamw"), lightningStep),
			category: OptimizerState, rule: "torch-optim", frame: "torch/optim/adamw.py:520:_multi_tensor_adamw", site: user + "train.py:95:train",
		},
		{
			name: "user LBFGS closure outside any framework",
			frames: fr(user+"model.py:30:forward", modCall, user+"train.py:50:closure", sp+"torch/optim/lbfgs.py:320:step",
				sp+"torch/optim/optimizer.py:485:wrapper", user+"train.py:60:main"),
			category: Activation, rule: "forward-intermediate", frame: user + "model.py:30:forward", site: user + "model.py:30:forward",
		},
		{
			name: "compiled optimizer step: generated code inside step stays optimizer state",
			frames: fr("/tmp/torchinductor_alice/xy/cxyz.py:120:call", sp+"torch/_functorch/_aot_autograd/runtime_wrappers.py:300:runtime_wrapper",
				sp+"torch/optim/adamw.py:200:step", sp+"torch/optim/optimizer.py:485:wrapper", user+"train.py:70:main"),
			category: OptimizerState, rule: "torch-optim", frame: "torch/optim/adamw.py:200:step", site: user + "train.py:70:main",
		},
		{
			name: "accelerate's optimizer wrapper around adamw state init",
			frames: fr(sp+"torch/optim/adamw.py:95:_init_group", sp+"torch/optim/adamw.py:200:step", sp+"torch/optim/optimizer.py:485:wrapper",
				sp+"accelerate/optimizer.py:170:step", user+"train.py:80:main"),
			category: OptimizerState, rule: "torch-optim", frame: "torch/optim/adamw.py:95:_init_group", site: user + "train.py:80:main",
		},
		{
			name: "HF Trainer: compute_loss is plumbing, the forward decides",
			frames: fr(user+"model.py:30:forward", modCall, sp+"transformers/trainer.py:3800:compute_loss",
				sp+"transformers/trainer.py:3700:training_step", sp+"transformers/trainer.py:2500:_inner_training_loop", user+"train.py:10:main"),
			category: Activation, rule: "forward-intermediate", frame: user + "model.py:30:forward", site: user + "model.py:30:forward",
		},
		{
			name: "lightning model_to_device moves parameters",
			frames: fr(sp+"torch/nn/modules/module.py:1150:convert", sp+"torch/nn/modules/module.py:825:_apply",
				sp+"lightning/fabric/utilities/device_dtype_mixin.py:55:to", ltn+"strategies/single_device.py:79:model_to_device",
				ltn+"trainer/trainer.py:539:fit", user+"train.py:95:train"),
			category: Parameters, rule: "module-to-device", frame: "torch/nn/modules/module.py:1150:convert", site: "lightning/fabric/utilities/device_dtype_mixin.py:55:to",
		},
		{
			name: "lightning batch transfer stays data",
			frames: fr(sp+"lightning/fabric/utilities/apply_func.py:104:batch_to", sp+"lightning/fabric/utilities/apply_func.py:110:move_data_to_device",
				ltn+"core/hooks.py:611:transfer_batch_to_device", ltn+"strategies/strategy.py:278:batch_to_device", ltn+"trainer/trainer.py:539:fit"),
			category: DataInput, rule: "data-functions", frame: "lightning/fabric/utilities/apply_func.py:110:move_data_to_device", site: "lightning/fabric/utilities/apply_func.py:104:batch_to",
		},
		{
			name:     "only plumbing: unknown, with the loop frame as the site",
			frames:   fr(ltn+"loops/fit_loop.py:216:run", ltn+"trainer/trainer.py:539:fit"),
			category: Unknown, frame: "lightning/pytorch/loops/fit_loop.py:216:run", site: "lightning/pytorch/loops/fit_loop.py:216:run",
		},
	}
	r := Default()
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			checkDecision(t, r.Decide(tc.frames), Decision{Category: tc.category, Rule: tc.rule, Frame: tc.frame, Site: tc.site})
		})
	}
}
