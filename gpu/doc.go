// Package gpu is the accelerator catalogue: each part's CUDA-visible memory, bandwidth, dense peak throughput per
// dtype and interconnect, lookup by key, alias or name, and custom parts read from a JSON or YAML file. The static
// estimator sizes and times a configuration against a Spec; `memscan analyze --gpu` takes its capacity from one;
// `memscan gpus` lists them. It imports nothing of memscan.
package gpu
