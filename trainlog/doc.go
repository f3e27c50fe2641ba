// Package trainlog decodes the memory lines of training logs (Megatron-LM, DeepSpeed, torchtitan): per-rank
// allocated and reserved bytes by iteration, and the theoretical memory Megatron prints.
//
// It imports only input (the positioned error); load dispatches to it.
package trainlog
