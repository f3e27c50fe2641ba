package detect_test

import (
	"context"
	"errors"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/memscan/memscan/findings"
	"github.com/memscan/memscan/internal/detect"
	"github.com/memscan/memscan/internal/replay"
	"github.com/memscan/memscan/internal/traingen"
	"github.com/memscan/memscan/internal/units"
)

const mib = 1 << 20

// healthy is a fixed-shape run whose cache holds less than 10 % beyond its peak.
var healthy = traingen.TrainingLoop{Iterations: 4, Layers: 4, WeightBytes: 64 * mib, ActivationBytes: 256 * mib,
	LogitsBytes: 3072 * mib, Annotations: true}

func runDetect(t *testing.T, c traingen.TrainingLoop) (*detect.Input, map[findings.ID]findings.Finding) {
	t.Helper()
	in := prepare(t, c.Build())
	fs, err := detect.Detect(context.Background(), in)
	if err != nil {
		t.Fatal(err)
	}
	byID := map[findings.ID]findings.Finding{}
	for _, f := range fs {
		if _, dup := byID[f.ID]; dup {
			t.Errorf("two %q findings on one device", f.ID)
		}
		byID[f.ID] = f
	}
	return in, byID
}

// TestHealthyStaysSilent: every detector stays silent on a healthy fixed-shape run, with and without annotations.
func TestHealthyStaysSilent(t *testing.T) {
	for _, ann := range []bool{true, false} {
		c := healthy
		c.Annotations = ann
		in, got := runDetect(t, c)
		d := in.Devices[0]
		_, peak := d.PeakIndex()
		_, res := d.MaxReservedIndex()
		if float64(res) > findings.CacheOverheadRatio*float64(peak) {
			t.Fatalf("fixture reserves %d for a peak of %d: not healthy", res, peak)
		}
		if len(got) != 0 {
			t.Errorf("annotations=%v: findings on a healthy run: %v", ann, got)
		}
	}
}

// TestLeakFires: logits kept from every iteration grow by exactly their size per iteration, at the logits' site;
// iteration 1's optimizer state is warm-up, not growth.
func TestLeakFires(t *testing.T) {
	c := healthy
	c.Keep = true
	c.LogitsBytes = 512 * mib
	_, got := runDetect(t, c)
	f, ok := got["leak"]
	if !ok {
		t.Fatalf("no leak finding: %v", got)
	}
	if f.Unit != findings.Bytes || f.Value != float64(c.LogitsBytes) {
		t.Errorf("growth %g %s per iteration, want %d bytes", f.Value, f.Unit, c.LogitsBytes)
	}
	if !strings.Contains(f.Evidence, "/home/user/proj/model.py:85:forward") || !strings.Contains(f.Evidence, units.Bytes(c.LogitsBytes)+" more at the end of each iteration") {
		t.Errorf("evidence does not name the site and the growth: %s", f.Evidence)
	}
	// At the peak (the last iteration's backward) the logits of every iteration are live; one of them was there
	// after iteration 1 already: a fix frees the other Iterations−1.
	if want := int64(c.Iterations-1) * c.LogitsBytes; f.SavedBytes != want || !strings.Contains(f.Advice, "frees "+units.Bytes(want)+" at the peak") {
		t.Errorf("saved at the peak %d, want %d: %s", f.SavedBytes, want, f.Advice)
	}
	// Warm-up: iteration 1 keeps 2 states per layer (and the first iteration's input until the next one).
	if want := "warm-up is not growth: " + units.Bytes(2*int64(c.Layers)*c.WeightBytes); !strings.Contains(f.Evidence, want) {
		t.Errorf("evidence lacks the warm-up of 2·4·64 MiB of optimizer state: %s", f.Evidence)
	}
	// Two iterations are not enough to tell growth from warm-up.
	c.Iterations = findings.LeakMinIterations - 1
	if _, got := runDetect(t, c); got["leak"].ID != "" {
		t.Errorf("leak called after %d iterations", c.Iterations)
	}
}

// TestLeakWithoutStack: a leaking site whose allocations carry no stack is named by its category and lifetime once,
// without a second parenthesis around it, and the evidence nests no parentheses.
func TestLeakWithoutStack(t *testing.T) {
	c := healthy
	c.Keep = true
	c.LogitsBytes = 512 * mib
	s := c.Build()
	for dev := range s.DeviceTraces {
		for i := range s.DeviceTraces[dev] {
			if e := &s.DeviceTraces[dev][i]; s.EntryStack(e) == traingen.TrainLogitsStack {
				e.Stack = 0
			}
		}
	}
	in := prepare(t, s)
	f, ok := detect.Leak(in.Devices[0])
	if !ok {
		t.Fatal("no leak finding")
	}
	if !strings.HasPrefix(f.Evidence, "memory allocated without a stack (no stack: ") || strings.Contains(f.Evidence, ") (") {
		t.Errorf("evidence names the stackless site badly: %s", f.Evidence)
	}
	depth := 0
	for _, r := range f.Evidence {
		switch r {
		case '(':
			if depth++; depth > 1 {
				t.Fatalf("nested parentheses: %s", f.Evidence)
			}
		case ')':
			depth--
		}
	}
}

// TestFragmentationFires: changing shapes leave cached segments the next, larger shape cannot use; the finding is
// in bytes, never more than reserved beyond the peak, and cache overhead points at it.
func TestFragmentationFires(t *testing.T) {
	c := healthy
	c.Scale = []float64{1, 3, 2, 4}
	c.LogitsBytes = 512 * mib
	in, got := runDetect(t, c)
	d := in.Devices[0]
	_, peak := d.PeakIndex()
	_, res := d.MaxReservedIndex()
	f, ok := got["fragmentation"]
	if !ok {
		t.Fatalf("no fragmentation finding: %v", got)
	}
	if f.Unit != findings.Bytes || f.Value < float64(findings.FragmentationMinSavingBytes) || f.Value > float64(res-peak) || f.Basis != "estimate" {
		t.Errorf("saving %g %s (%s), want bytes in [%d, %d]", f.Value, f.Unit, f.Basis, findings.FragmentationMinSavingBytes, res-peak)
	}
	co, ok := got["cache-overhead"]
	if !ok || co.Value != float64(res)/float64(peak) || !strings.Contains(co.Advice, "fragmentation finding") {
		t.Errorf("cache overhead %+v, want ratio %g pointing at the fragmentation finding", co, float64(res)/float64(peak))
	}
	if _, ok := got["idle-cache"]; ok {
		t.Errorf("empty_cache advised for memory a later iteration of another shape may need: %v", got["idle-cache"])
	}
	// Expandable segments already on: never advised again.
	in.Snapshot.AllocatorSettings.ExpandableSegments = true
	if _, ok, _ := detect.Fragmentation(context.Background(), in.Snapshot, d, nil); ok {
		t.Error("expandable segments advised although the snapshot has them on")
	}
}

// model is an allocator model that answers fixed replayed peaks: the baseline (recorded settings) and the
// what-if, with a partial reason.
type model struct {
	base, peak int64
	partial    string
}

func (m model) PeakReserved(context.Context, int, string) (detect.Replayed, error) {
	return detect.Replayed{Baseline: m.base, Peak: m.peak, Partial: m.partial}, nil
}

// TestFragmentationUsesModel: with an allocator model the saving is its replay — the baseline's peak less the
// what-if's, the figure the report's replay section shows — not the estimate, and it fires only from
// FragmentationMinSavingBytes of that saving, whatever the estimate says.
func TestFragmentationUsesModel(t *testing.T) {
	c := healthy
	c.Scale = []float64{1, 3, 2, 4}
	in := prepare(t, c.Build())
	d := in.Devices[0]
	_, res := d.MaxReservedIndex()
	estimate, ok, err := detect.Fragmentation(context.Background(), in.Snapshot, d, nil)
	if err != nil || !ok || estimate.Value < float64(findings.FragmentationMinSavingBytes)+1<<20 {
		t.Fatalf("the fixture's estimate is not above the threshold: %+v %v %v", estimate, ok, err)
	}
	f, ok, err := detect.Fragmentation(context.Background(), in.Snapshot, d, model{base: res, peak: res - 1<<30})
	if err != nil || !ok || f.Value != 1<<30 || f.SavedBytes != 1<<30 || f.Basis != "allocator replay" {
		t.Errorf("with a model saving 1 GiB: %+v %v %v", f, ok, err)
	}
	// The estimate crosses the threshold, the replay does not: silent.
	if f, ok, _ := detect.Fragmentation(context.Background(), in.Snapshot, d, model{base: res, peak: res - findings.FragmentationMinSavingBytes + 1}); ok {
		t.Errorf("fired on the estimate although the replay saves less than the threshold: %+v", f)
	}
	// A replay whose baseline departs from the recording still states its own difference.
	if f, ok, _ := detect.Fragmentation(context.Background(), in.Snapshot, d, model{base: res + 1<<30, peak: res}); !ok || f.Value != 1<<30 {
		t.Errorf("saving %g, want the replay's baseline less its what-if (1 GiB)", f.Value)
	}
	// A partial replay is used, and says why it is partial.
	f, ok, _ = detect.Fragmentation(context.Background(), in.Snapshot, d, model{base: res, peak: res - 1<<30, partial: "the trace starts late"})
	if !ok || f.Value != 1<<30 || f.Basis != "allocator replay" || !strings.HasSuffix(f.Evidence, "The replay is partial, so the saving covers the recorded part of the run: the trace starts late") {
		t.Errorf("partial replay: %+v", f)
	}
}

// pendingModel is model while its replay still runs: Pending says so until the first answer (and counts the
// times it said so).
type pendingModel struct {
	model
	asked   *bool
	pending *int
}

func (m pendingModel) Pending() bool {
	if *m.asked {
		return false
	}
	*m.pending++
	return true
}

func (m pendingModel) PeakReserved(ctx context.Context, dev int, settings string) (detect.Replayed, error) {
	*m.asked = true
	return m.model.PeakReserved(ctx, dev, settings)
}

// TestDetectPendingModel: with a model still replaying, the detectors that do not ask it are judged first and the
// fragmenting cudaMallocs are found before the answer; the findings and their order are those of a model that
// had answered already, whether the replay's saving makes a finding or not.
func TestDetectPendingModel(t *testing.T) {
	c := healthy
	c.Scale = []float64{1, 3, 2, 4}
	for _, saving := range []int64{1 << 30, findings.FragmentationMinSavingBytes - 1} {
		ready := prepare(t, c.Build())
		r := res(ready.Devices[0])
		ready.Model = model{base: r, peak: r - saving}
		want, err := detect.Detect(context.Background(), ready)
		if err != nil {
			t.Fatal(err)
		}
		waiting := prepare(t, c.Build())
		asked, pending := false, 0
		waiting.Model = pendingModel{model: model{base: r, peak: r - saving}, asked: &asked, pending: &pending}
		got, err := detect.Detect(context.Background(), waiting)
		if err != nil {
			t.Fatal(err)
		}
		if !asked || pending == 0 {
			t.Fatalf("the model was asked %v, found pending %d times; want both", asked, pending)
		}
		ids := func(fs []findings.Finding) (out []findings.ID) {
			for _, f := range fs {
				out = append(out, f.ID)
			}
			return out
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("saving %d: findings %v with a pending model, %v with a ready one", saving, ids(got), ids(want))
		}
		wantFrag := saving >= findings.FragmentationMinSavingBytes
		if slices.Contains(ids(want), findings.Fragmentation) != wantFrag || !slices.Contains(ids(want), findings.CacheOverhead) {
			t.Errorf("saving %d: findings %v, want cache overhead and fragmentation %v", saving, ids(want), wantFrag)
		}
	}
}

// failing is an allocator model that cannot replay the trace.
type failing struct{}

func (failing) PeakReserved(context.Context, int, string) (detect.Replayed, error) {
	return detect.Replayed{}, errors.New("settings \"x\": unknown key")
}

// TestFragmentationWithoutReplay: when the model cannot replay the trace, Basis is the plain "estimate" and the
// reason is its own closing sentence, not nested inside the basis; the advice says the saving is an estimate.
func TestFragmentationWithoutReplay(t *testing.T) {
	c := healthy
	c.Scale = []float64{1, 3, 2, 4}
	in := prepare(t, c.Build())
	d := in.Devices[0]
	f, ok, err := detect.Fragmentation(context.Background(), in.Snapshot, d, failing{})
	if err != nil || !ok || f.Basis != "estimate" {
		t.Fatalf("with a failing model: %+v %v %v", f, ok, err)
	}
	if !strings.HasSuffix(f.Evidence, "(estimate), saving "+units.Bytes(int64(f.Value))+" of the "+units.Bytes(res(d)-peak(d))+
		". The allocator replay was not used: settings \"x\": unknown key") {
		t.Errorf("evidence does not end with the saving and why the replay was not used: %s", f.Evidence)
	}
	if !strings.Contains(f.Advice, "saves "+units.Bytes(int64(f.Value))+" by estimate") {
		t.Errorf("advice does not say the saving is an estimate: %s", f.Advice)
	}
}

func res(d *detect.Device) int64  { _, r := d.MaxReservedIndex(); return r }
func peak(d *detect.Device) int64 { _, p := d.PeakIndex(); return p }

// TestIdleCacheFires: a checkpoint-loading buffer freed in the setup, never reused by any iteration, is the
// memory empty_cache() gives back: exactly its segment.
func TestIdleCacheFires(t *testing.T) {
	c := healthy
	c.LogitsBytes = 512 * mib
	c.SetupScratchBytes = 1536 * mib
	_, got := runDetect(t, c)
	f, ok := got["idle-cache"]
	if !ok || f.Value != float64(c.SetupScratchBytes) || f.SavedBytes != c.SetupScratchBytes || f.Phase != "setup" {
		t.Fatalf("idle cache %+v (ok %v), want the 1.5 GiB setup buffer", f, ok)
	}
}

// TestOOMExplained: the OOM in layer 5 of 8 is explained by phase and category, and the forward is extrapolated:
// at the failing point of layer 8 it would hold 8 weights, the input and 8 activations.
func TestOOMExplained(t *testing.T) {
	c := healthy
	c.Layers, c.OOMAtLayer, c.Iterations = 8, 5, 1
	in, got := runDetect(t, c)
	f, ok := got["oom"]
	if !ok || len(got) != 1 {
		t.Fatalf("findings %v, want one oom", got)
	}
	d := in.Devices[0]
	x := detect.ExplainOOM(d, f.Event)
	act, w, input := c.ActivationBytes, c.WeightBytes, int64(2*mib)
	if x.Layers != 8 || x.LayersDone != 4 || x.PerLayerBytes != act {
		t.Errorf("layers %d done %d per layer %d, want 8, 4, %d", x.Layers, x.LayersDone, x.PerLayerBytes, act)
	}
	if want := 8*w + input + 8*act; x.ProjectedBytes != want {
		t.Errorf("projected %d, want %d", x.ProjectedBytes, want)
	}
	// Reserved: weights, input, four activations and the one reused transient segment (half an activation).
	if want := 8*w + input + 4*act + act/2 + 1*mib; x.CapacityBytes != want {
		t.Errorf("capacity %d, want %d", x.CapacityBytes, want)
	}
	if x.Live.Bytes != 8*w+input+4*act || shareOf(x.Live.ByPhase, "forward") != 4*act || shareOf(x.Live.ByPhase, "setup") != 8*w+input {
		t.Errorf("live at the OOM %+v", x.Live)
	}
	if f.Value != float64(x.ProjectedBytes-x.CapacityBytes) || f.Phase != "forward" || f.Iteration != 1 {
		t.Errorf("finding %+v", f)
	}
}

// TestIterationPeak: in the fixture every iteration peaks at the start of its backward (all activations, the
// logits and the first activation gradient live); iteration 1 holds no optimizer state yet, iteration 2 does.
func TestIterationPeak(t *testing.T) {
	in := prepare(t, healthy.Build())
	d := in.Devices[0]
	j1, ok1 := d.IterationPeak(0)
	j2, ok2 := d.IterationPeak(1)
	p1, p2 := d.LiveAt(j1, 5), d.LiveAt(j2, 5)
	if !ok1 || !ok2 || p1.Phase != "backward" || p2.Phase != "backward" {
		t.Fatalf("iteration peaks in %q and %q, want backward", p1.Phase, p2.Phase)
	}
	states := 2 * int64(healthy.Layers) * healthy.WeightBytes
	if shareOf(p1.ByComponent, "optimizer") != 0 || shareOf(p2.ByComponent, "optimizer") != states {
		t.Errorf("optimizer state %d then %d, want 0 then %d", shareOf(p1.ByComponent, "optimizer"), shareOf(p2.ByComponent, "optimizer"), states)
	}
	if _, ok := d.IterationPeak(len(d.Timeline().Iterations)); ok {
		t.Error("a peak for an iteration that does not exist")
	}
}

// TestLeakLongRun: over 70 iterations the ends are sampled, and the growth per iteration is still the logits'.
func TestLeakLongRun(t *testing.T) {
	c := healthy
	c.Keep, c.Iterations, c.LogitsBytes = true, 70, 64*mib
	_, got := runDetect(t, c)
	if f, ok := got["leak"]; !ok || f.Value != float64(c.LogitsBytes) {
		t.Errorf("leak %+v, want %d bytes per iteration", f, c.LogitsBytes)
	}
}

// TestPeakIndex: the peak is the first event at the highest allocated memory; −1 only when the memory before the
// first event is strictly higher (a trace that returns to its starting level peaks at that event, as analyze's
// replay says).
func TestPeakIndex(t *testing.T) {
	for _, c := range []struct {
		name      string
		initial   int64
		allocated []int64
		idx       int
		bytes     int64
	}{
		{"rises", 10, []int64{20, 30, 30, 5}, 1, 30},
		{"starts higher", 40, []int64{20, 30}, -1, 40},
		{"returns to the start", 30, []int64{20, 30, 10}, 1, 30},
		{"no events", 7, nil, -1, 7},
	} {
		d := &detect.Device{DeviceTrace: &replay.DeviceTrace{Series: replay.Series{InitialAllocated: c.initial, Allocated: c.allocated,
			Reserved: replay.StepsOf(c.initial, c.allocated)}}}
		if j, b := d.PeakIndex(); j != c.idx || b != c.bytes {
			t.Errorf("%s: PeakIndex = %d, %d; want %d, %d", c.name, j, b, c.idx, c.bytes)
		}
		if j, b := d.MaxReservedIndex(); j != c.idx || b != c.bytes {
			t.Errorf("%s: MaxReservedIndex = %d, %d; want %d, %d", c.name, j, b, c.idx, c.bytes)
		}
	}
}

// TestOOMLayersFromStructure: a model built on the CPU and moved with .to(device) allocates its 8 layers' 3
// tensors each from one stack (module.py's _apply); a stack's repetitions count 24 tensors, the parameter sizes
// repeat a 3-tensor pattern 8 times: 8 layers, and the projection is the layers' own weights, the input and 8
// activations. A setup of one tensor shows no repeated layer and projects nothing.
func TestOOMLayersFromStructure(t *testing.T) {
	c := healthy
	c.Layers, c.OOMAtLayer, c.Iterations, c.LayerTensors, c.MovedToDevice = 8, 5, 1, 3, true
	in, got := runDetect(t, c)
	f, ok := got["oom"]
	if !ok {
		t.Fatalf("findings %v, want an oom", got)
	}
	x := detect.ExplainOOM(in.Devices[0], f.Event)
	layer := c.WeightBytes + c.WeightBytes/2 + c.WeightBytes/4
	if x.Layers != 8 || x.LayersDone != 4 || x.PerLayerBytes != c.ActivationBytes {
		t.Errorf("layers %d done %d per layer %d, want 8, 4, %d", x.Layers, x.LayersDone, x.PerLayerBytes, c.ActivationBytes)
	}
	if want := 8*layer + 2*mib + 8*c.ActivationBytes; x.ProjectedBytes != want {
		t.Errorf("projected %d, want %d", x.ProjectedBytes, want)
	}
	if want := "8 layers: the setup's allocations repeat a pattern of 3 tensors, " + units.Bytes(layer) + " each, 8 times"; !strings.Contains(f.Evidence, want) {
		t.Errorf("evidence does not say what the layer count was read from (%q): %s", want, f.Evidence)
	}
	c.Layers, c.OOMAtLayer, c.LayerTensors = 1, 1, 1
	in, got = runDetect(t, c)
	if x := detect.ExplainOOM(in.Devices[0], got["oom"].Event); x.Layers != 0 || x.PerLayerBytes != 0 || strings.Contains(got["oom"].Evidence, "layers had passed") {
		t.Errorf("a one-tensor model extrapolated: %+v", x)
	}
}

// TestFindingsNameTheirDevice: on a snapshot of two devices that leak alike, each device's leak names its device
// in its evidence; a single device's findings do not.
func TestFindingsNameTheirDevice(t *testing.T) {
	c := healthy
	c.Keep = true
	c.LogitsBytes = 512 * mib
	s, other := c.Build(), c.Build()
	for i := range other.Segments {
		other.Segments[i].Device = 1
		s.Segments = append(s.Segments, other.Segments[i])
	}
	for _, a := range other.ExternalAnnotations {
		a.Device = 1
		s.ExternalAnnotations = append(s.ExternalAnnotations, a)
	}
	s.DeviceTraces = append(s.DeviceTraces, other.DeviceTraces[0])
	fs, err := detect.Detect(context.Background(), prepare(t, s))
	if err != nil {
		t.Fatal(err)
	}
	var leaks []string
	for _, f := range fs {
		if f.ID == findings.Leak {
			leaks = append(leaks, f.Evidence)
			if want := "device " + strconv.Itoa(f.Device) + ": "; !strings.HasPrefix(f.Evidence, want) {
				t.Errorf("the leak of device %d does not begin %q: %s", f.Device, want, f.Evidence)
			}
		}
	}
	if len(leaks) != 2 || leaks[0] == leaks[1] {
		t.Errorf("want two leaks that read apart, got %q", leaks)
	}
	_, one := runDetect(t, c)
	if ev := one[findings.Leak].Evidence; strings.HasPrefix(ev, "device ") {
		t.Errorf("a single device's leak names its device: %s", ev)
	}
}
