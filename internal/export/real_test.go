package export

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/google/pprof/profile"
	"github.com/memscan/memscan/analyze"
	"github.com/memscan/memscan/internal/testutil"
	"github.com/memscan/memscan/load"
	"github.com/memscan/memscan/report"
	"github.com/memscan/memscan/snapshot"
)

func decodeReal(t testing.TB, name string) *snapshot.Snapshot {
	t.Helper()
	dir := testutil.SharedDir(t, "real_snapshots")
	in, err := load.DecodeFile(context.Background(), filepath.Join(dir, name))
	if err != nil {
		t.Fatal(err)
	}
	if in.Snapshot == nil {
		t.Fatalf("%s is not a snapshot", name)
	}
	return in.Snapshot
}

// realPprofFiles cover python-only stacks (2.10+), C++-interleaved stacks (2.8) and legacy history blocks (2.0).
var realPprofFiles = []string{
	"MAGMA27__assignment2-systems__memory_snapshot.pickle",
	"Constructor-Sun__code_location__memory_snapshot.pickle",
	"Yiyi-philosophy__LLM-inference__oom_snapshot.pickle",
}

// TestPprofRealMatchesAnalysis parses the exported profile back: inuse_space sums to the requested bytes of the
// live blocks (summed here from the decoded blocks), allocated_space to the analysis' allocated_bytes, and the bytes
// per site label equal the analysis' site table.
func TestPprofRealMatchesAnalysis(t *testing.T) {
	for _, name := range realPprofFiles {
		t.Run(name, func(t *testing.T) {
			s := decodeReal(t, name)
			ctx := context.Background()
			rep, err := analyze.AnalyzeSnapshot(ctx, s, analyze.Options{TopN: 1 << 30})
			if err != nil {
				t.Fatal(err)
			}
			var buf bytes.Buffer
			if err := WritePprof(ctx, &buf, s, ProfileOptions{At: AtSnapshot, Classify: RulesClassifier(nil), Source: name}); err != nil {
				t.Fatal(err)
			}
			p, err := profile.Parse(&buf)
			if err != nil {
				t.Fatal(err)
			}
			var requested, objects int64
			for _, seg := range s.Segments {
				for _, b := range seg.Blocks {
					if b.State == snapshot.BlockActiveAllocated {
						requested += b.RequestedSize
						objects++
					}
				}
			}
			var gotObj, gotReq, gotAlloc int64
			bySite := map[string]int64{}
			for _, smp := range p.Sample {
				gotObj += smp.Value[0]
				gotReq += smp.Value[1]
				gotAlloc += smp.Value[2]
				bySite[smp.Label["site"][0]] += smp.Value[2]
			}
			totals, _ := rep.AllocatorTotals()
			if gotObj != objects || gotReq != requested || gotAlloc != totals.AllocatedBytes {
				t.Errorf("profile: %d objects, %d requested, %d allocated; blocks: %d, %d; analysis allocated %d",
					gotObj, gotReq, gotAlloc, objects, requested, totals.AllocatedBytes)
			}
			wantSite := map[string]int64{}
			for _, st := range rep.Sites {
				wantSite[st.Site] += st.Bytes
			}
			if len(wantSite) != len(bySite) {
				t.Errorf("%d sites in the profile, %d in the analysis", len(bySite), len(wantSite))
			}
			for site, b := range wantSite {
				if bySite[site] != b {
					t.Errorf("site %s: %d bytes in the profile, %d in the analysis", site, bySite[site], b)
				}
			}
		})
	}
}

// TestGoToolPprofTopReal runs `go tool pprof -top -tagleaf=site` on the profile of a real snapshot: the rows are
// the analysis' top sites with the same bytes, in the same order.
func TestGoToolPprofTopReal(t *testing.T) {
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("go not on PATH: cannot run go tool pprof")
	}
	s := decodeReal(t, realPprofFiles[1])
	ctx := context.Background()
	rep, err := analyze.AnalyzeSnapshot(ctx, s, analyze.Options{TopN: 1 << 30})
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "mem.pb.gz")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := WritePprof(ctx, f, s, ProfileOptions{Classify: RulesClassifier(nil)}); err != nil {
		t.Fatal(err)
	}
	f.Close()
	const n = 8
	out, err := exec.Command(goBin, "tool", "pprof", "-top", "-tagleaf=site", "-sample_index=allocated_space", "-unit=B",
		"-nodefraction=0", "-nodecount="+strconv.Itoa(n), path).CombinedOutput()
	if err != nil {
		t.Fatalf("go tool pprof: %v\n%s", err, out)
	}
	// The analysis groups sites by (site, category); pprof's site tag groups by site alone.
	bytesOf := map[string]int64{}
	for _, st := range rep.Sites {
		bytesOf[st.Site] += st.Bytes
	}
	bySite := make([]int64, 0, len(bytesOf))
	for _, b := range bytesOf {
		bySite = append(bySite, b)
	}
	slices.Sort(bySite)
	slices.Reverse(bySite)
	var rows int
	for _, line := range strings.Split(string(out), "\n") {
		fields := strings.Fields(line)
		if len(fields) < 6 || !strings.HasSuffix(fields[0], "B") || !strings.HasSuffix(fields[1], "%") {
			continue
		}
		flat, err := strconv.ParseInt(strings.TrimSuffix(fields[0], "B"), 10, 64)
		if err != nil {
			continue
		}
		site := strings.Join(fields[5:], " ")
		if flat == 0 {
			continue // frames above the site pseudo-leaf
		}
		want, ok := bytesOf[site]
		if !ok || want != flat {
			t.Errorf("pprof row %q: %d bytes, analysis has %d (known %v)", site, flat, want, ok)
		}
		if rows < len(bySite) && bySite[rows] != flat {
			t.Errorf("row %d: %d bytes, the analysis' site %d has %d", rows, flat, rows, bySite[rows])
		}
		rows++
	}
	if rows == 0 {
		t.Fatalf("no site rows in pprof -top:\n%s", out)
	}
}

// TestPerfettoReal validates the trace of a multi-device real snapshot and checks its last allocated counter per
// device against the requested bytes left live, summed from the blocks.
func TestPerfettoReal(t *testing.T) {
	s := decodeReal(t, realPprofFiles[1])
	var buf bytes.Buffer
	if err := WritePerfetto(context.Background(), &buf, s, TraceOptions{Classify: RulesClassifier(nil)}); err != nil {
		t.Fatal(err)
	}
	evs := validateTraceEvents(t, buf.Bytes())
	last := map[string]float64{}
	for _, e := range evs {
		if e["ph"] == "C" && strings.HasSuffix(e["name"].(string), " memory") {
			last[e["name"].(string)] = e["args"].(map[string]any)["allocated"].(float64)
		}
	}
	for dev, tr := range s.DeviceTraces {
		if len(tr) == 0 {
			continue
		}
		var live int64
		for _, seg := range s.Segments {
			if seg.Device != dev {
				continue
			}
			for _, b := range seg.Blocks {
				if b.State == snapshot.BlockActiveAllocated {
					live += b.RequestedSize
				}
			}
		}
		name := "GPU" + strconv.Itoa(dev) + " memory"
		if got, ok := last[name]; !ok || int64(got) != live {
			t.Errorf("%s ends at %v allocated, blocks hold %d requested", name, got, live)
		}
	}
}

// TestSliceRealDecodesBack slices a real snapshot and decodes the pickle with memscan's decoder.
func TestSliceRealDecodesBack(t *testing.T) {
	s := decodeReal(t, realPprofFiles[1])
	ctx := context.Background()
	var buf bytes.Buffer
	w := Window{Start: 1000, End: 3000}
	if _, err := WriteSlice(ctx, &buf, s, SliceOptions{Window: &w}); err != nil {
		t.Fatal(err)
	}
	in, err := load.Decode(ctx, "slice.pickle", &buf)
	if err != nil {
		t.Fatal(err)
	}
	got := in.Snapshot
	if stateTotals(got) != stateTotals(s) || len(got.Segments) != len(s.Segments) {
		t.Errorf("totals %+v, want %+v", stateTotals(got), stateTotals(s))
	}
	for d, tr := range s.DeviceTraces {
		a, b := w.bounds(len(tr))
		if len(got.DeviceTraces[d]) != b-a {
			t.Fatalf("device %d: %d events, want %d", d, len(got.DeviceTraces[d]), b-a)
		}
		for i, e := range got.DeviceTraces[d] {
			o := tr[a+i]
			if e.Action != o.Action || e.Addr != o.Addr || e.Size != o.Size || e.TimeUS != o.TimeUS || !sameFrames(got.EntryStack(&e), s.EntryStack(&o)) {
				t.Fatalf("device %d event %d differs", d, i)
			}
		}
	}
}

// TestPickleRoundTripReal re-encodes every real snapshot and decodes it again with memscan's decoder: segments,
// blocks, histories, traces, settings and annotations come back equal (stacks compared by frames).
func TestPickleRoundTripReal(t *testing.T) {
	dir := testutil.SharedDir(t, "real_snapshots")
	files, err := filepath.Glob(filepath.Join(dir, "*.pickle"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no snapshots in %s: %v", dir, err)
	}
	ctx := context.Background()
	for _, path := range files {
		t.Run(filepath.Base(path), func(t *testing.T) {
			orig := decodeReal(t, filepath.Base(path))
			var buf bytes.Buffer
			if err := WritePickle(ctx, &buf, orig); err != nil {
				t.Fatal(err)
			}
			in, err := load.Decode(ctx, "roundtrip.pickle", &buf)
			if err != nil {
				t.Fatal(err)
			}
			got := in.Snapshot
			if len(got.Segments) != len(orig.Segments) {
				t.Fatalf("%d segments, want %d", len(got.Segments), len(orig.Segments))
			}
			for i := range orig.Segments {
				a, b := &orig.Segments[i], &got.Segments[i]
				if a.Device != b.Device || a.Address != b.Address || a.TotalSize != b.TotalSize || a.AllocatedSize != b.AllocatedSize ||
					a.ActiveSize != b.ActiveSize || a.RequestedSize != b.RequestedSize || a.Stream != b.Stream || a.Type != b.Type ||
					a.Pool != b.Pool || a.IsExpandable != b.IsExpandable || !sameFrames(a.Stack, b.Stack) || len(a.Blocks) != len(b.Blocks) {
					t.Fatalf("segment %d differs", i)
				}
				for j := range a.Blocks {
					x, y := &a.Blocks[j], &b.Blocks[j]
					if x.Address != y.Address || x.Size != y.Size || x.RequestedSize != y.RequestedSize || x.State != y.State ||
						!sameFrames(x.Stack, y.Stack) || len(x.History) != len(y.History) {
						t.Fatalf("segment %d block %d differs: %+v vs %+v", i, j, *x, *y)
					}
					for k := range x.History {
						if x.History[k].Addr != y.History[k].Addr || x.History[k].RealSize != y.History[k].RealSize || !sameFrames(x.History[k].Stack, y.History[k].Stack) {
							t.Fatalf("segment %d block %d history %d differs", i, j, k)
						}
					}
				}
			}
			if len(got.DeviceTraces) != len(orig.DeviceTraces) {
				t.Fatalf("%d device traces, want %d", len(got.DeviceTraces), len(orig.DeviceTraces))
			}
			for d := range orig.DeviceTraces {
				if len(got.DeviceTraces[d]) != len(orig.DeviceTraces[d]) {
					t.Fatalf("device %d: %d events, want %d", d, len(got.DeviceTraces[d]), len(orig.DeviceTraces[d]))
				}
				for i := range orig.DeviceTraces[d] {
					x, y := orig.DeviceTraces[d][i], got.DeviceTraces[d][i]
					if xs, ys := orig.EntryStack(&x), got.EntryStack(&y); !sameFrames(xs, ys) || (xs == nil) != (ys == nil) {
						t.Fatalf("device %d event %d: stacks differ", d, i)
					}
					if xe, ye := orig.EntryExtra(&x), got.EntryExtra(&y); *xe != *ye {
						t.Fatalf("device %d event %d: extras %+v, want %+v", d, i, *ye, *xe)
					}
					x.Stack, y.Stack, x.Extra, y.Extra = 0, 0, 0, 0
					if x != y {
						t.Fatalf("device %d event %d: %+v, want %+v", d, i, y, x)
					}
				}
			}
			if (orig.AllocatorSettings == nil) != (got.AllocatorSettings == nil) ||
				(orig.AllocatorSettings != nil && !reflect.DeepEqual(orig.AllocatorSettings, got.AllocatorSettings)) {
				t.Errorf("allocator settings %+v, want %+v", got.AllocatorSettings, orig.AllocatorSettings)
			}
			if len(orig.ExternalAnnotations) != len(got.ExternalAnnotations) {
				t.Errorf("%d annotations, want %d", len(got.ExternalAnnotations), len(orig.ExternalAnnotations))
			}
		})
	}
}

// TestPprofPeakMatchesAnalysis checks the live set exported at the trace peak against memscan's own replay: on
// single-device snapshots the profile holds exactly the analysis' peak bytes.
func TestPprofPeakMatchesAnalysis(t *testing.T) {
	for _, name := range []string{"MAGMA27__assignment2-systems__memory_snapshot.pickle", "JasperSolt__EoR_NN__snapshot.pickle",
		"kkaitlyn111__cs336-a2-systems__cs336_systems_memory_logs_memory_ctx128_forward.pickle"} {
		t.Run(name, func(t *testing.T) {
			s := decodeReal(t, name)
			ctx := context.Background()
			rep, err := analyze.AnalyzeSnapshot(ctx, s, analyze.Options{})
			if err != nil {
				t.Fatal(err)
			}
			if rep.Peak == nil {
				t.Fatal("analysis found no peak")
			}
			p, err := BuildProfile(ctx, s, ProfileOptions{At: AtPeak, Classify: RulesClassifier(nil)})
			if err != nil {
				t.Fatal(err)
			}
			var total int64
			byCat := map[string]int64{}
			for _, smp := range p.Sample {
				total += smp.Value[1]
				byCat[smp.Label["category"][0]] += smp.Value[1]
			}
			if total != rep.Peak.Bytes {
				t.Errorf("profile at peak holds %d bytes, the analysis' peak is %d", total, rep.Peak.Bytes)
			}
			for _, c := range rep.Peak.Categories {
				if byCat[c.Name] != c.Bytes {
					t.Errorf("category %s at peak: %d in the profile, %d in the analysis", c.Name, byCat[c.Name], c.Bytes)
				}
			}
		})
	}
}

// analyzedTrainingRun decodes and analyzes the H200 Llama training snapshot, whose backward allocations carry no
// stack (skipped when the shared runs are absent).
func analyzedTrainingRun(t *testing.T) (*snapshot.Snapshot, *report.Report) {
	t.Helper()
	dir := testutil.SharedDir(t, "gpu_runs")
	in, err := load.DecodeFile(context.Background(), filepath.Join(dir, "llama1b-bf16-b4-s2048-snap.pickle.gz"))
	if err != nil {
		t.Fatal(err)
	}
	rep, err := analyze.AnalyzeSnapshot(context.Background(), in.Snapshot, analyze.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return in.Snapshot, rep
}

// TestPerfettoPeakMatchesAnalysis: on the H200 training run, whose backward allocations carry no stack, the
// category counters at the allocated peak hold what the analysis reports at its peak, category by category
// (the lifetime decides where the stack cannot, so almost nothing stays Unknown).
func TestPerfettoPeakMatchesAnalysis(t *testing.T) {
	s, rep := analyzedTrainingRun(t)
	var buf bytes.Buffer
	if err := WritePerfetto(context.Background(), &buf, s, TraceOptions{Classify: RulesClassifier(nil)}); err != nil {
		t.Fatal(err)
	}
	evs := validateTraceEvents(t, buf.Bytes())
	// Counters come in pairs at one timestamp: memory, then by category.
	var atPeak map[string]any
	for i := 0; i+1 < len(evs); i++ {
		e := evs[i]
		if e["ph"] == "C" && e["name"] == "GPU0 memory" && int64(e["args"].(map[string]any)["allocated"].(float64)) == rep.Peak.Bytes {
			atPeak = evs[i+1]["args"].(map[string]any)
			break
		}
	}
	if atPeak == nil {
		t.Fatalf("no counter reaches the analysis' peak of %d bytes", rep.Peak.Bytes)
	}
	want := map[string]int64{}
	for _, c := range rep.Peak.Categories {
		want[c.Name] = c.Bytes
	}
	for name, v := range atPeak {
		if got := int64(v.(float64)); got != want[name] {
			t.Errorf("%s at the peak: %d in the trace, %d in the analysis", name, got, want[name])
		}
	}
	// The other way round: a category of the analysis that the trace has no counter for.
	for name, b := range want {
		if _, ok := atPeak[name]; !ok && b != 0 {
			t.Errorf("%s at the peak: %d in the analysis, no counter in the trace", name, b)
		}
	}
	if u := want["Unknown"]; u*20 > rep.Peak.Bytes {
		t.Errorf("Unknown holds %d of %d bytes at the peak", u, rep.Peak.Bytes)
	}
}

// TestPprofSnapshotMatchesAnalysisCategories: on the H200 training run the profile of the dump carries the
// categories of the analysis' dump view, where lifetimes decide for blocks whose stacks cannot (module
// __init__ weights, a gradient kept after backward).
func TestPprofSnapshotMatchesAnalysisCategories(t *testing.T) {
	s, rep := analyzedTrainingRun(t)
	p, err := BuildProfile(context.Background(), s, ProfileOptions{At: AtSnapshot, Classify: RulesClassifier(nil)})
	if err != nil {
		t.Fatal(err)
	}
	byCat := map[string]int64{}
	for _, smp := range p.Sample {
		byCat[smp.Label["category"][0]] += smp.Value[2]
	}
	want := map[string]int64{}
	for _, c := range rep.Categories {
		want[c.Name] = c.Bytes
	}
	if !reflect.DeepEqual(byCat, want) {
		t.Errorf("profile categories %v, analysis %v", byCat, want)
	}
	if want["Unknown"]*100 > want["Parameters/Weights"] {
		t.Errorf("the dump view leaves %d bytes Unknown beside %d of weights", want["Unknown"], want["Parameters/Weights"])
	}
}
