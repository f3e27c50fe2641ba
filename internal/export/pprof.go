package export

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"slices"
	"strconv"

	"github.com/google/pprof/profile"
	"github.com/memscan/memscan/internal/replay"
	"github.com/memscan/memscan/snapshot"
)

// At selects the moment a live-memory export describes.
type At string

const (
	// AtSnapshot is the allocator state when the snapshot was taken: its active_allocated blocks.
	AtSnapshot At = "snapshot"
	// AtPeak is, per device, the live set after the trace event with the most live requested bytes.
	AtPeak At = "peak"
)

// ParseAt validates an --at value.
func ParseAt(s string) (At, error) {
	switch At(s) {
	case AtSnapshot, AtPeak:
		return At(s), nil
	}
	return "", fmt.Errorf("unknown --at %q (want snapshot or peak)", s)
}

// ProfileOptions configure the pprof export.
type ProfileOptions struct {
	At       At
	Classify Classifier // nil means DefaultClassifier
	// Source names the input in the profile comments.
	Source string
}

// LiveSample is one live allocation as the pprof export counts it.
type LiveSample struct {
	Device   int
	Stream   uint64
	State    string
	Bytes    int64 // requested bytes (what the user asked for)
	Size     int64 // rounded block bytes; equals Bytes for trace-only allocations
	Stack    *snapshot.Stack
	Category string
	Site     string

	addr uint64
}

// LiveSet returns the live allocations at the requested moment: the active_allocated blocks of the snapshot, or for
// AtPeak the live set at each device's trace peak (devices without a trace contribute their snapshot blocks, the
// only state known for them).
func LiveSet(ctx context.Context, s *snapshot.Snapshot, at At, classify Classifier) ([]LiveSample, error) {
	classify = memoized(classify)
	var out []LiveSample
	add := func(dev int, addr, stream uint64, state string, bytes, size int64, st *snapshot.Stack) *LiveSample {
		cat, site := classify(st)
		out = append(out, LiveSample{Device: dev, Stream: stream, State: state, Bytes: bytes, Size: size, Stack: st, Category: cat, Site: site, addr: addr})
		return &out[len(out)-1]
	}
	addBlocks := func(dev int) {
		for i := range s.Segments {
			seg := &s.Segments[i]
			if dev >= 0 && seg.Device != dev {
				continue
			}
			for j := range seg.Blocks {
				b := &seg.Blocks[j]
				if b.State == snapshot.BlockActiveAllocated {
					add(seg.Device, b.Address, seg.Stream, b.State.String(), b.RequestedSize, b.Size, b.Stack)
				}
			}
		}
	}
	// category is classify without the site, what the replayed categories start from.
	category := func(st *snapshot.Stack) string { c, _ := classify(st); return c }
	switch at {
	case AtSnapshot, "":
		addBlocks(-1)
		// A device with a trace: the blocks still live at its end take the category the analysis gives them
		// (the lifetime decides where the stack cannot), so the profile's labels match the report's dump views.
		for dev, tr := range s.DeviceTraces {
			if len(tr) == 0 {
				continue
			}
			r, err := replay.ReplayDevice(ctx, s, dev)
			if err != nil {
				return nil, err
			}
			ls := r.Lifetimes()
			cats := replayedCategories(r, ls, category)
			atEnd := map[uint64]int{}
			for i := range ls {
				if l := &ls[i]; l.End == len(tr) {
					atEnd[l.Addr] = i
				}
			}
			for i := range out {
				smp := &out[i]
				if k, ok := atEnd[smp.addr]; ok && smp.Device == dev {
					smp.Category = cats[k]
				}
			}
		}
	case AtPeak:
		for _, dev := range devices(s) {
			if dev >= len(s.DeviceTraces) || len(s.DeviceTraces[dev]) == 0 {
				addBlocks(dev)
				continue
			}
			r, err := replay.ReplayDevice(ctx, s, dev)
			if err != nil {
				return nil, err
			}
			// The live set at the peak of memscan's own replay, so the profile and the report agree; ordered
			// live-before-the-trace first, then by alloc event.
			ls := r.Lifetimes()
			cats := replayedCategories(r, ls, category)
			var live []int
			for k := range ls {
				if l := &ls[k]; l.Start <= r.PeakIndex && r.PeakIndex < l.End {
					live = append(live, k)
				}
			}
			slices.SortStableFunc(live, func(x, y int) int {
				a, b := &ls[x], &ls[y]
				return cmp.Or(cmp.Compare(a.Start, b.Start), cmp.Compare(a.Addr, b.Addr))
			})
			for _, k := range live {
				a := &ls[k]
				smp := add(dev, a.Addr, a.Stream, snapshot.BlockActiveAllocated.String(), a.Size, a.Size, a.Stack)
				smp.Category = cats[k]
			}
		}
	default:
		return nil, fmt.Errorf("unknown moment %q", at)
	}
	return out, nil
}

// BuildProfile builds a pprof heap-style profile of live memory by allocation stack: sample types
// inuse_objects/count, inuse_space/bytes (requested bytes, the default) and allocated_space/bytes (rounded block
// bytes, what torch.cuda.memory_allocated and memscan's category and site tables count); labels category, site,
// stream, state and device; numeric label size in bytes. `go tool pprof -top -tagleaf=site` lists the sites as
// memscan names them. Locations are the frames the viewer shows, innermost first as pprof wants them;
// functions are named basename(file):function so pprof's default by-name grouping keeps different files apart.
func BuildProfile(ctx context.Context, s *snapshot.Snapshot, opt ProfileOptions) (*profile.Profile, error) {
	samples, err := LiveSet(ctx, s, opt.At, opt.Classify)
	if err != nil {
		return nil, err
	}
	at := opt.At
	if at == "" {
		at = AtSnapshot
	}
	p := &profile.Profile{
		SampleType: []*profile.ValueType{{Type: "inuse_objects", Unit: "count"}, {Type: "inuse_space", Unit: "bytes"},
			{Type: "allocated_space", Unit: "bytes"}},
		DefaultSampleType: "inuse_space",
		PeriodType:        &profile.ValueType{Type: "space", Unit: "bytes"},
		Period:            1,
		Comments:          []string{fmt.Sprintf("memscan export: live memory at %s of %s", at, opt.Source)},
	}
	mapping := &profile.Mapping{ID: 1, File: "python", HasFunctions: true, HasFilenames: true, HasLineNumbers: true}
	p.Mapping = []*profile.Mapping{mapping}

	type fnKey struct{ name, file string }
	funcs := make(map[fnKey]*profile.Function)
	locs := make(map[snapshot.Frame]*profile.Location)
	stacks := make(map[*snapshot.Stack][]*profile.Location)
	location := func(f snapshot.Frame) *profile.Location {
		if l, ok := locs[f]; ok {
			return l
		}
		name := f.Name
		if f.Filename != "" && f.Filename != "??" {
			name = baseName(f.Filename) + ":" + f.Name
		}
		k := fnKey{name, f.Filename}
		fn, ok := funcs[k]
		if !ok {
			fn = &profile.Function{ID: uint64(len(p.Function) + 1), Name: name, SystemName: f.Name, Filename: f.Filename}
			funcs[k] = fn
			p.Function = append(p.Function, fn)
		}
		l := &profile.Location{ID: uint64(len(p.Location) + 1), Mapping: mapping, Line: []profile.Line{{Function: fn, Line: int64(f.Line)}}}
		locs[f] = l
		p.Location = append(p.Location, l)
		return l
	}
	nonPython := snapshot.Frame{Name: "<non-python>"}
	for i := range samples {
		if i%4096 == 0 {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
		}
		ls := &samples[i]
		loc, ok := stacks[ls.Stack]
		if !ok {
			if ls.Stack != nil {
				for _, f := range ls.Stack.Frames {
					if KeepFrame(f) {
						loc = append(loc, location(f))
					}
				}
			}
			if len(loc) == 0 {
				loc = []*profile.Location{location(nonPython)}
			}
			stacks[ls.Stack] = loc
		}
		p.Sample = append(p.Sample, &profile.Sample{
			Location: loc,
			Value:    []int64{1, ls.Bytes, ls.Size},
			Label: map[string][]string{
				"category": {ls.Category},
				"site":     {ls.Site},
				"stream":   {strconv.FormatUint(ls.Stream, 10)},
				"state":    {ls.State},
				"device":   {strconv.Itoa(ls.Device)},
			},
			NumLabel: map[string][]int64{"size": {ls.Size}},
			NumUnit:  map[string][]string{"size": {"bytes"}},
		})
	}
	if err := p.CheckValid(); err != nil {
		return nil, fmt.Errorf("building pprof profile: %w", err)
	}
	return p, nil
}

// WritePprof writes the gzipped profile.proto of live memory.
func WritePprof(ctx context.Context, w io.Writer, s *snapshot.Snapshot, opt ProfileOptions) error {
	p, err := BuildProfile(ctx, s, opt)
	if err != nil {
		return err
	}
	if err := p.Write(w); err != nil {
		return fmt.Errorf("writing pprof profile: %w", err)
	}
	return nil
}
