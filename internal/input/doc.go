// Package input holds what every input decoder shares: the positioned decode error, content sniffing (the one
// place that decides which format a file is), the bounded streaming JSON reader, and what an input path says
// about rank and iteration.
//
// It imports only the standard library; snapshot, tracer, memtimeline, trainlog and load import it.
package input
