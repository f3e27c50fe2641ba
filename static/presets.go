package static

import (
	"fmt"
	"math"
	"sort"
	"strings"
)

// presets are the published architectures (from the models' config.json / papers). Only dimensions that change
// memory are kept.
var presets = map[string]ModelConfig{
	"gpt2":         {Family: "gpt2", Type: "gpt", NumLayers: 12, HiddenSize: 768, NumAttentionHeads: 12, VocabSize: 50257, TieWordEmbeddings: true, MaxPositionEmbeddings: 1024, LinearBias: true},
	"gpt2-medium":  {Family: "gpt2", Type: "gpt", NumLayers: 24, HiddenSize: 1024, NumAttentionHeads: 16, VocabSize: 50257, TieWordEmbeddings: true, MaxPositionEmbeddings: 1024, LinearBias: true},
	"gpt2-large":   {Family: "gpt2", Type: "gpt", NumLayers: 36, HiddenSize: 1280, NumAttentionHeads: 20, VocabSize: 50257, TieWordEmbeddings: true, MaxPositionEmbeddings: 1024, LinearBias: true},
	"gpt2-xl":      {Family: "gpt2", Type: "gpt", NumLayers: 48, HiddenSize: 1600, NumAttentionHeads: 25, VocabSize: 50257, TieWordEmbeddings: true, MaxPositionEmbeddings: 1024, LinearBias: true},
	"pythia-1.4b":  {Family: "gpt-neox", Type: "gpt", NumLayers: 24, HiddenSize: 2048, NumAttentionHeads: 16, VocabSize: 50304, MaxPositionEmbeddings: 2048, LinearBias: true},
	"gpt-neox-20b": {Family: "gpt-neox", Type: "gpt", NumLayers: 44, HiddenSize: 6144, NumAttentionHeads: 64, VocabSize: 50432, MaxPositionEmbeddings: 2048, LinearBias: true},
	"qwen2.5-0.5b": {Family: "qwen2", Type: "llama", NumLayers: 24, HiddenSize: 896, NumAttentionHeads: 14, NumKVHeads: 2, FFNHiddenSize: 4864, VocabSize: 151936, TieWordEmbeddings: true, QKVBias: true},
	"qwen2.5-1.5b": {Family: "qwen2", Type: "llama", NumLayers: 28, HiddenSize: 1536, NumAttentionHeads: 12, NumKVHeads: 2, FFNHiddenSize: 8960, VocabSize: 151936, TieWordEmbeddings: true, QKVBias: true},
	"gemma-2b":     {Family: "gemma", Type: "llama", NumLayers: 18, HiddenSize: 2048, NumAttentionHeads: 8, NumKVHeads: 1, HeadDim: 256, FFNHiddenSize: 16384, VocabSize: 256000, TieWordEmbeddings: true, Activation: "geglu"},
	"gemma-7b":     {Family: "gemma", Type: "llama", NumLayers: 28, HiddenSize: 3072, NumAttentionHeads: 16, NumKVHeads: 16, HeadDim: 256, FFNHiddenSize: 24576, VocabSize: 256000, TieWordEmbeddings: true, Activation: "geglu"},
	"gemma2-2b":    {Family: "gemma2", Type: "llama", NumLayers: 26, HiddenSize: 2304, NumAttentionHeads: 8, NumKVHeads: 4, HeadDim: 256, FFNHiddenSize: 9216, VocabSize: 256000, TieWordEmbeddings: true, Activation: "geglu"},
	"gemma2-9b":    {Family: "gemma2", Type: "llama", NumLayers: 42, HiddenSize: 3584, NumAttentionHeads: 16, NumKVHeads: 8, HeadDim: 256, FFNHiddenSize: 14336, VocabSize: 256000, TieWordEmbeddings: true, Activation: "geglu"},
	"gemma2-27b":   {Family: "gemma2", Type: "llama", NumLayers: 46, HiddenSize: 4608, NumAttentionHeads: 32, NumKVHeads: 16, HeadDim: 128, FFNHiddenSize: 36864, VocabSize: 256000, TieWordEmbeddings: true, Activation: "geglu"},
	"phi3-mini":    {Family: "phi3", Type: "llama", NumLayers: 32, HiddenSize: 3072, NumAttentionHeads: 32, NumKVHeads: 32, FFNHiddenSize: 8192, VocabSize: 32064},
	"phi3-medium":  {Family: "phi3", Type: "llama", NumLayers: 40, HiddenSize: 5120, NumAttentionHeads: 40, NumKVHeads: 10, FFNHiddenSize: 17920, VocabSize: 32064},
	"gpt3-175b":    {Type: "gpt", NumLayers: 96, HiddenSize: 12288, NumAttentionHeads: 96, VocabSize: 50257, TieWordEmbeddings: true, MaxPositionEmbeddings: 2048, LinearBias: true},
	"llama2-7b":    {Type: "llama", NumLayers: 32, HiddenSize: 4096, NumAttentionHeads: 32, NumKVHeads: 32, FFNHiddenSize: 11008, VocabSize: 32000},
	"llama2-13b":   {Type: "llama", NumLayers: 40, HiddenSize: 5120, NumAttentionHeads: 40, NumKVHeads: 40, FFNHiddenSize: 13824, VocabSize: 32000},
	"llama2-70b":   {Type: "llama", NumLayers: 80, HiddenSize: 8192, NumAttentionHeads: 64, NumKVHeads: 8, FFNHiddenSize: 28672, VocabSize: 32000},
	"llama3-8b":    {Type: "llama", NumLayers: 32, HiddenSize: 4096, NumAttentionHeads: 32, NumKVHeads: 8, FFNHiddenSize: 14336, VocabSize: 128256},
	"llama3-70b":   {Type: "llama", NumLayers: 80, HiddenSize: 8192, NumAttentionHeads: 64, NumKVHeads: 8, FFNHiddenSize: 28672, VocabSize: 128256},
	"llama3-405b":  {Type: "llama", NumLayers: 126, HiddenSize: 16384, NumAttentionHeads: 128, NumKVHeads: 8, FFNHiddenSize: 53248, VocabSize: 128256},
	"llama3.2-1b":  {Type: "llama", NumLayers: 16, HiddenSize: 2048, NumAttentionHeads: 32, NumKVHeads: 8, HeadDim: 64, FFNHiddenSize: 8192, VocabSize: 128256, TieWordEmbeddings: true},
	"llama3.2-3b":  {Type: "llama", NumLayers: 28, HiddenSize: 3072, NumAttentionHeads: 24, NumKVHeads: 8, HeadDim: 128, FFNHiddenSize: 8192, VocabSize: 128256, TieWordEmbeddings: true},
	"mistral-7b":   {Family: "mistral", Type: "llama", NumLayers: 32, HiddenSize: 4096, NumAttentionHeads: 32, NumKVHeads: 8, FFNHiddenSize: 14336, VocabSize: 32000},
	"mixtral-8x7b": {Family: "mixtral", Type: "llama", NumLayers: 32, HiddenSize: 4096, NumAttentionHeads: 32, NumKVHeads: 8, FFNHiddenSize: 14336, VocabSize: 32000, NumExperts: 8, MoETopK: 2, MoEFFNHiddenSize: 14336},
	"qwen2.5-7b":   {Family: "qwen2", Type: "llama", NumLayers: 28, HiddenSize: 3584, NumAttentionHeads: 28, NumKVHeads: 4, FFNHiddenSize: 18944, VocabSize: 152064, QKVBias: true},
	"qwen2.5-72b":  {Family: "qwen2", Type: "llama", NumLayers: 80, HiddenSize: 8192, NumAttentionHeads: 64, NumKVHeads: 8, FFNHiddenSize: 29568, VocabSize: 152064, QKVBias: true},
}

// aliases accept the spellings people type.
var aliases = map[string]string{
	"llama-2-7b": "llama2-7b", "llama-2-13b": "llama2-13b", "llama-2-70b": "llama2-70b",
	"llama-3-8b": "llama3-8b", "llama-3-70b": "llama3-70b", "llama-3-405b": "llama3-405b",
	"llama3.1-8b": "llama3-8b", "llama3.1-70b": "llama3-70b", "llama3.1-405b": "llama3-405b",
	"llama-3.2-1b": "llama3.2-1b", "llama-3.2-3b": "llama3.2-3b", "llama-7b": "llama2-7b", "llama-13b": "llama2-13b",
	"gpt-3": "gpt3-175b", "gpt2-small": "gpt2", "qwen-0.5b": "qwen2.5-0.5b", "gpt3": "gpt3-175b", "mixtral": "mixtral-8x7b", "mistral": "mistral-7b",
}

// PresetNames lists the preset names, sorted.
func PresetNames() []string {
	names := make([]string, 0, len(presets))
	for n := range presets {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// Preset returns the model dimensions of a named preset.
func Preset(name string) (ModelConfig, error) {
	key := strings.ToLower(strings.TrimSpace(name))
	if a, ok := aliases[key]; ok {
		key = a
	}
	m, ok := presets[key]
	if !ok {
		return ModelConfig{}, fmt.Errorf("unknown preset %q (known: %s)", name, strings.Join(PresetNames(), ", "))
	}
	m.Preset = key
	return m, nil
}

// sizeTable holds standard LLaMA-style shapes by size (GPT-3 paper widths below 7B, LLaMA-1/2 above), vocab 32000.
var sizeTable = []ModelConfig{
	{NumLayers: 12, HiddenSize: 768, NumAttentionHeads: 12, FFNHiddenSize: 2048},
	{NumLayers: 24, HiddenSize: 1024, NumAttentionHeads: 16, FFNHiddenSize: 2816},
	{NumLayers: 24, HiddenSize: 1536, NumAttentionHeads: 16, FFNHiddenSize: 4096},
	{NumLayers: 24, HiddenSize: 2048, NumAttentionHeads: 16, FFNHiddenSize: 5504},
	{NumLayers: 32, HiddenSize: 2560, NumAttentionHeads: 32, FFNHiddenSize: 6912},
	{NumLayers: 32, HiddenSize: 4096, NumAttentionHeads: 32, FFNHiddenSize: 11008},
	{NumLayers: 40, HiddenSize: 5120, NumAttentionHeads: 40, FFNHiddenSize: 13824},
	{NumLayers: 60, HiddenSize: 6656, NumAttentionHeads: 52, FFNHiddenSize: 17920},
	{NumLayers: 80, HiddenSize: 8192, NumAttentionHeads: 64, NumKVHeads: 8, FFNHiddenSize: 28672},
	{NumLayers: 96, HiddenSize: 12288, NumAttentionHeads: 96, NumKVHeads: 8, FFNHiddenSize: 32768},
	{NumLayers: 126, HiddenSize: 16384, NumAttentionHeads: 128, NumKVHeads: 8, FFNHiddenSize: 53248},
}

// ModelForSize picks the standard LLaMA-style shape whose parameter count is closest (in ratio) to size billions,
// as memprof-style "--model-size 7.0" does.
func ModelForSize(size float64) (ModelConfig, error) {
	if !(size > 0) || size > 5000 {
		return ModelConfig{}, fmt.Errorf("%g (must be in (0, 5000] billion parameters)", size)
	}
	best, bestDist := ModelConfig{}, math.Inf(1)
	for _, m := range sizeTable {
		m.Type, m.VocabSize = "llama", 32000
		if m.NumKVHeads == 0 {
			m.NumKVHeads = m.NumAttentionHeads
		}
		n := float64(countParams(m).Total) / 1e9
		if d := math.Abs(math.Log(n / size)); d < bestDist {
			best, bestDist = m, d
		}
	}
	best.SizeBillions = size
	return best, nil
}

// ResolvedPreset is a preset with the architecture defaults its family fills in (GPT-2/NeoX: KV heads = heads,
// FFN = 4·hidden), as an estimate uses it.
func ResolvedPreset(name string) (ModelConfig, error) {
	m, err := Preset(name)
	if err != nil {
		return ModelConfig{}, err
	}
	c := DefaultConfig()
	c.Model = ModelConfig{Preset: m.Preset}
	if err := c.resolveModel(); err != nil {
		return ModelConfig{}, fmt.Errorf("preset %s: %w", name, err)
	}
	return c.Model, nil
}
