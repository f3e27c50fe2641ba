// Package tracer decodes the peak-memory JSON that the PyTorch memory tracer (MemoryDispatchMode) writes: per
// device, the peak of tracked storage bytes and the storages alive at it, with their creation and release stacks.
//
// It imports input (errors, the JSON stream) and snapshot (for the shared Frame and Stack); load dispatches to it.
package tracer
