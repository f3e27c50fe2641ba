package results

import (
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestRunTasks: every task runs once, never more than jobs at a time, and with one worker strictly costliest
// first (ties in their given order).
func TestRunTasks(t *testing.T) {
	costs := []float64{5, 60, 20, 60, 1, 20, 0, 100}
	for _, jobs := range []int{-1, 0, 1, 2, 3, 16} {
		var mu sync.Mutex
		var order []int
		var running, most atomic.Int32
		tasks := make([]task, len(costs))
		for k, c := range costs {
			tasks[k] = task{cost: c, do: func() {
				n := running.Add(1)
				for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
				}
				time.Sleep(2 * time.Millisecond) // overlap, where the bound allows it
				mu.Lock()
				order = append(order, k)
				mu.Unlock()
				running.Add(-1)
			}}
		}
		runTasks(jobs, tasks)
		got := slices.Clone(order)
		slices.Sort(got)
		if !slices.Equal(got, []int{0, 1, 2, 3, 4, 5, 6, 7}) {
			t.Fatalf("jobs %d: tasks run %v, want each once", jobs, order)
		}
		if limit := int32(max(jobs, 1)); most.Load() > limit {
			t.Errorf("jobs %d: %d tasks ran at once", jobs, most.Load())
		}
		if jobs <= 1 {
			if want := []int{7, 1, 3, 2, 5, 0, 4, 6}; !slices.Equal(order, want) {
				t.Errorf("jobs %d: order %v, want %v", jobs, order, want)
			}
		}
	}
	runTasks(4, nil) // no task, no worker
}
