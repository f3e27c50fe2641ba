package results

import (
	"cmp"
	"slices"
	"sync"
	"sync/atomic"
)

// task is one independent piece of a run directory's work (a report, a chart, a device's page timeline) and what
// it is expected to cost, in microseconds of one CPU: only the order of the estimates matters.
type task struct {
	cost float64
	do   func()
}

// runTasks runs tasks on at most jobs goroutines, the costliest first. The set ends when its last task does, so
// the long ones start at once and the short ones fill in around them (longest-processing-time order). Running
// more goroutines than CPUs instead shares the CPUs among all of them, and the longest task (a long training
// loop's summary.json) was left to finish alone, a fifth of a second after the rest.
func runTasks(jobs int, tasks []task) {
	order := make([]int, len(tasks))
	for k := range order {
		order[k] = k
	}
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(tasks[b].cost, tasks[a].cost) })
	var next atomic.Int64
	var wg sync.WaitGroup
	for range min(max(jobs, 1), len(tasks)) {
		wg.Go(func() {
			for {
				k := int(next.Add(1)) - 1
				if k >= len(order) {
					return
				}
				tasks[order[k]].do()
			}
		})
	}
	wg.Wait()
}
