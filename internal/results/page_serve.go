package results

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"sync"

	"github.com/memscan/memscan/report"
)

// PageHandler serves the interactive page of run over HTTP (memscan view): the page itself at /, and each device's
// timeline under /timeline/INPUT/DEVICE/. A trace of up to maxSentEvents events is sent whole (meta, data) when
// the page asks for it, with no size budget; a longer one stays here, indexed once (report.TimelineIndex), and
// the page asks for each zoom's columns (env) and each hovered moment (at).
func PageHandler(run *report.Run) (http.Handler, error) {
	return pageHandler(run, maxSentEvents)
}

func pageHandler(run *report.Run, remoteAbove int) (http.Handler, error) {
	page, err := renderHTML("", run, pageOptions{served: true, remoteAbove: remoteAbove})
	if err != nil {
		return nil, err
	}
	s := &pageServer{run: run, page: page, cache: map[string]*servedTimeline{}}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Write(s.page)
	})
	mux.HandleFunc("GET /timeline/{input}/{device}/{part}", s.timeline)
	return mux, nil
}

type pageServer struct {
	run  *report.Run
	page []byte

	mu    sync.Mutex
	cache map[string]*servedTimeline
}

// servedTimeline is one device's timeline, encoded or indexed on first use.
type servedTimeline struct {
	d    *report.TimelineDetail
	meta pageMeta
	once sync.Once
	blob string
	err  error
	idx  *report.TimelineIndex
	iOnc sync.Once
}

func (st *servedTimeline) index() *report.TimelineIndex {
	st.iOnc.Do(func() { st.idx = st.d.Index() })
	return st.idx
}

// timeline answers one request about a timeline: meta (JSON), data (the blob's base64 text), env (the columns
// of events [from, to) in n buckets) or at (the moment after one event).
func (s *pageServer) timeline(w http.ResponseWriter, r *http.Request) {
	st, err := s.lookup(r.PathValue("input"), r.PathValue("device"))
	if err != nil {
		http.Error(w, err.Error(), http.StatusNotFound)
		return
	}
	q := r.URL.Query()
	switch r.PathValue("part") {
	case "meta":
		m := st.meta
		if pk := m.PeakEvent; pk >= 0 && pk < st.d.Events {
			m.PeakCategories = st.index().CategoriesAt(pk)
		}
		writeJSON(w, m)
	case "data":
		st.once.Do(func() { st.blob, st.err = encodeDetail(st.d) })
		if st.err != nil {
			http.Error(w, st.err.Error(), http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.Write([]byte(st.blob))
	case "env":
		from, err1 := strconv.Atoi(q.Get("from"))
		to, err2 := strconv.Atoi(q.Get("to"))
		n, err3 := strconv.Atoi(q.Get("n"))
		if err1 != nil || err2 != nil || err3 != nil || n < 1 || n > 10000 || from < 0 || to <= from {
			http.Error(w, "env wants from < to and 1 ≤ n ≤ 10000", http.StatusBadRequest)
			return
		}
		writeJSON(w, newEnvJSON(st.index().Envelope(from, to, n)))
	case "at":
		j, err := strconv.Atoi(q.Get("event"))
		if err != nil || j < 0 || j >= st.d.Events {
			http.Error(w, fmt.Sprintf("at wants an event in 0..%d", st.d.Events-1), http.StatusBadRequest)
			return
		}
		writeJSON(w, newMomentJSON(st.d, st.index(), j))
	default:
		http.NotFound(w, r)
	}
}

// lookup returns the timeline of the device named by the request.
func (s *pageServer) lookup(input, device string) (*servedTimeline, error) {
	i, err1 := strconv.Atoi(input)
	dev, err2 := strconv.Atoi(device)
	if err1 != nil || err2 != nil || i < 0 || i >= len(s.run.Inputs) || s.run.Inputs[i] == nil {
		return nil, fmt.Errorf("no input %q with a device %q", input, device)
	}
	key := input + "/" + device
	s.mu.Lock()
	defer s.mu.Unlock()
	if st, ok := s.cache[key]; ok {
		return st, nil
	}
	p, ok := s.run.Inputs[i].Part.(*report.SnapshotReport)
	if !ok {
		return nil, fmt.Errorf("input %d has no allocator trace", i)
	}
	for k := range p.Details {
		if d := &p.Details[k]; d.Device == dev {
			st := &servedTimeline{d: d, meta: newPageMeta(i, p, d)}
			s.cache[key] = st
			return st, nil
		}
	}
	return nil, fmt.Errorf("input %d has no trace of device %d", i, dev)
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	if err := json.NewEncoder(w).Encode(v); err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
	}
}

// envJSON is a TimelineEnvelope as the page reads it.
type envJSON struct {
	From  int       `json:"from"`
	To    int       `json:"to"`
	Start []int     `json:"start"`
	AMin  []int64   `json:"amin"`
	AMax  []int64   `json:"amax"`
	Peak  []int     `json:"peak"`
	RMax  []int64   `json:"rmax"`
	REnd  []int64   `json:"rend"`
	WIf   []int64   `json:"wif,omitempty"`
	Cats  [][]int64 `json:"cats"`
}

func newEnvJSON(e report.TimelineEnvelope) envJSON {
	return envJSON{From: e.From, To: e.To, Start: e.Start, AMin: e.AllocMin, AMax: e.AllocMax, Peak: e.Peak,
		RMax: e.ReservedMax, REnd: e.ReservedEnd, WIf: e.WhatIfEnd, Cats: e.ByCategory}
}

// momentJSON is what the page shows about one event: memory then and the largest live blocks with their stacks.
type momentJSON struct {
	Event     int         `json:"event"`
	Time      *int64      `json:"time"` // µs after the first event; null without times
	Allocated int64       `json:"allocated"`
	Reserved  int64       `json:"reserved"`
	WhatIf    *int64      `json:"whatif"`
	Blocks    []blockJSON `json:"blocks"`
}

type blockJSON struct {
	Size     int64    `json:"size"`
	Category string   `json:"category"`
	Site     string   `json:"site"`
	Start    int32    `json:"start"`
	End      int32    `json:"end"`
	Reason   string   `json:"reason"`
	Frames   []string `json:"frames"`
}

// momentBlocks is how many of the largest live blocks a moment lists, as the page does for a trace it holds.
const momentBlocks = 10

func newMomentJSON(d *report.TimelineDetail, x *report.TimelineIndex, j int) momentJSON {
	mo := momentJSON{Event: j, Allocated: x.Allocated(j), Reserved: x.Reserved(j), Blocks: []blockJSON{}}
	if len(d.TimeUS) == d.Events {
		t := d.TimeUS[j] - d.TimeUS[0]
		mo.Time = &t
	}
	if v, ok := x.WhatIf(j); ok {
		mo.WhatIf = &v
	}
	for _, b := range x.LiveAt(j, momentBlocks) {
		bj := blockJSON{Size: d.Size[b], Category: d.Categories[d.SiteCategory[d.Site[b]]], Site: d.Sites[d.Site[b]],
			Start: d.Start[b], End: d.End[b], Reason: d.Reasons[d.Reason[b]], Frames: []string{}}
		if st := d.Stack[b]; st >= 0 {
			for _, f := range d.StackFrames[d.StackStart[st]:d.StackStart[st+1]] {
				bj.Frames = append(bj.Frames, d.Frames[f])
			}
		}
		mo.Blocks = append(mo.Blocks, bj)
	}
	return mo
}
