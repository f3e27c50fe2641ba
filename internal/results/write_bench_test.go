package results

import (
	"io"
	"testing"

	"github.com/memscan/memscan/phases"
	"github.com/memscan/memscan/report"
)

// longIterationsRun is iterationsRun with n more iterations and iteration table rows, the shape of a long training
// trace's report.
func longIterationsRun(n int) *report.Run {
	run := iterationsRun()
	p := run.Inputs[0].Part.(*report.SnapshotReport)
	tl, rows := p.Iterations[0], p.IterationTable
	for i := range n {
		it := tl.Iterations[i%len(tl.Iterations)]
		it.Index = i + 1
		tl.Iterations = append(tl.Iterations, it)
		r := rows[i%len(rows)]
		r.Iteration = i + 1
		rows = append(rows, r)
	}
	p.Iterations = append([]phases.Timeline{tl}, p.Iterations[1:]...)
	p.IterationTable = rows
	return run
}

// BenchmarkWriteLongRun writes summary.json and report.msgpack of a 39,000-iteration run, the size of a generated
// training snapshot's (memscan-gen --training 39000).
func BenchmarkWriteLongRun(b *testing.B) {
	run := longIterationsRun(39000)
	for _, bc := range []struct {
		name  string
		write func(io.Writer, *report.Run) error
	}{{"summary.json", WriteJSON}, {"report.msgpack", WriteMsgpack}} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if err := bc.write(io.Discard, run); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
