package static_test

import (
	"fmt"

	"github.com/memscan/memscan/static"
)

// Example predicts LLaMA-2 7B weights for bf16 inference on one GPU. The parameter count is the published
// 6,738,415,616: 32 layers of 4·4096² attention + 3·4096·11008 MLP + 2·4096 norms, plus 2·32000·4096 untied
// embedding and head, plus the final 4096 norm. Weights are 2 bytes each.
func Example() {
	cfg := static.DefaultConfig()
	cfg.Mode = "inference"
	cfg.Model = static.ModelConfig{Preset: "llama2-7b"}
	cfg.Inference.BatchSize = 1
	cfg.Inference.PromptLength = 2048
	cfg.Hardware.GPU = "a100-80gb-sxm"
	cfg.Hardware.NumGPUs = 1
	rep, err := static.Estimate(cfg)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("parameters:", rep.Summary.ParamCount)
	fmt.Println("weight bytes:", rep.Summary.WeightMemoryBytes, "=", 2*rep.Summary.ParamCount)
	fmt.Println("fits:", rep.Fit.Fits)
	// Output:
	// parameters: 6738415616
	// weight bytes: 13476831232 = 13476831232
	// fits: true
}
