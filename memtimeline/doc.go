// Package memtimeline decodes torch.profiler memory timelines (profiler.export_memory_timeline): the plot form
// [times, sizes] and the raw event list, as bytes per category over time for one device.
//
// It imports only input (errors, the JSON stream, path parsing); load dispatches to it.
package memtimeline
