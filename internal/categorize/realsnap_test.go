package categorize

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/memscan/memscan/internal/realsnap"
	"github.com/memscan/memscan/snapshot"
)

// TestLightningSnapshotForwardIsNotOptimizerState checks a real OOM snapshot of a PyTorch Lightning run (a DiT on
// timm blocks, Adam) whose every allocation was made inside optimizer.step(closure): the forward activations that
// filled the GPU must land in operator or activation categories, and Optimizer State must be small both in the
// dump and at the trace's peak (the OOM came in the first forward, before Adam created any state).
func TestLightningSnapshotForwardIsNotOptimizerState(t *testing.T) {
	dir, manifest := realsnap.Load(t)
	const name = "Nesta-gitU__discrete_diffusion__memory_snapshot_json.pickle"
	var want *realsnap.Entry
	for i := range manifest {
		if manifest[i].File == name {
			want = &manifest[i]
		}
	}
	if want == nil {
		t.Skipf("%s is not in the manifest", name)
	}
	f, err := os.Open(filepath.Join(dir, name))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	s, err := snapshot.DecodePickle(context.Background(), name, f)
	if err != nil {
		t.Fatal(err)
	}
	c := NewCategorizer(nil)
	forwardSites := []string{"timm/models/vision_transformer.py:93:forward", "dit.py:125:forward"}
	operator := map[string]bool{Activation: true, LinearMatMul: true, Attention: true, Normalization: true, Embedding: true}

	// The dump: every active block; PyTorch's own stats count their sizes as allocated plus the rounding inside
	// them (free_int).
	dump := map[string]int64{}
	var total int64
	for _, seg := range s.Segments {
		for _, b := range seg.Blocks {
			if !b.State.Active() {
				continue
			}
			d := c.Stack(b.Stack)
			dump[d.Category] += b.Size
			total += b.Size
			for _, site := range forwardSites {
				if strings.HasSuffix(d.Site, site) && !operator[d.Category] {
					t.Errorf("dump: block at %s is %s (rule %s, frame %s), want an operator or activation category",
						d.Site, d.Category, d.Rule, d.Frame)
				}
			}
		}
	}
	if w := want.Segsum.Allocated + want.Segsum.FreeInt; total != w {
		t.Fatalf("active blocks sum to %d bytes, PyTorch's stats say %d", total, w)
	}
	checkSmall(t, "dump", dump, total)
	if dump[Activation]+dump[LinearMatMul] < total/2 {
		t.Errorf("dump: Activation %d + Linear/MatMul %d bytes, want most of the %d allocated", dump[Activation], dump[LinearMatMul], total)
	}

	// The trace's peak: replay alloc and free_completed, and categorize what was live at the largest live total.
	live := map[uint64]*snapshot.TraceEntry{}
	var cur, peak int64
	var atPeak map[string]int64
	for _, tr := range s.DeviceTraces {
		for i := range tr {
			e := &tr[i]
			switch e.Action {
			case snapshot.ActionAlloc:
				live[e.Addr] = e
				cur += e.Size
			case snapshot.ActionFreeCompleted:
				if a, ok := live[e.Addr]; ok {
					cur -= a.Size
					delete(live, e.Addr)
				}
			}
			if cur > peak {
				peak = cur
				atPeak = map[string]int64{}
				for _, a := range live {
					atPeak[c.Stack(s.EntryStack(a)).Category] += a.Size
				}
			}
		}
	}
	if peak == 0 {
		t.Fatal("the trace records no allocation")
	}
	checkSmall(t, "trace peak", atPeak, peak)
}

// checkSmall fails when Optimizer State holds more than 1% of total.
func checkSmall(t *testing.T, at string, byCat map[string]int64, total int64) {
	t.Helper()
	if opt := byCat[OptimizerState]; opt*100 > total {
		t.Errorf("%s: Optimizer State holds %d of %d bytes; categories %v", at, opt, total, byCat)
	}
}
