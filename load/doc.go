// Package load turns input paths into decoded inputs: it sniffs each file's content (input.Sniff), hands it to
// the decoder of its format (snapshot, tracer JSON, profiler timeline, training log) and decodes batches in a
// bounded pool.
//
// It imports input and the format packages; analyze and the CLI import it. No format package imports it.
package load
