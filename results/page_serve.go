package results

import (
	"fmt"
	"net/http"
	"strconv"
	"sync"

	"github.com/memscan/memscan/analyze"
)

// PageHandler serves the interactive page of run over HTTP (memscan view): the page itself at /, and each
// device's timeline at /timeline/INPUT/DEVICE/meta and /data, encoded when first asked for. Unlike index.html it
// has no size budget, so a trace too large to embed is still shown with every event.
func PageHandler(run *analyze.Run) (http.Handler, error) {
	page, err := renderHTML("", run, pageOptions{served: true})
	if err != nil {
		return nil, err
	}
	s := &pageServer{run: run, page: page, cache: map[string]pageTimeline{}}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Write(s.page)
	})
	mux.HandleFunc("GET /timeline/{input}/{device}/{part}", s.timeline)
	return mux, nil
}

type pageServer struct {
	run  *analyze.Run
	page []byte

	mu    sync.Mutex
	cache map[string]pageTimeline
}

// timeline answers one timeline's meta (JSON) or data (the blob's base64 text).
func (s *pageServer) timeline(w http.ResponseWriter, r *http.Request) {
	tl, err := s.encoded(r.PathValue("input"), r.PathValue("device"))
	if err != nil {
		http.Error(w, err.Error(), http.StatusNotFound)
		return
	}
	switch r.PathValue("part") {
	case "meta":
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(tl.Meta))
	case "data":
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.Write([]byte(tl.Blob))
	default:
		http.NotFound(w, r)
	}
}

// encoded returns the timeline of the device named by the request, encoding it on first use.
func (s *pageServer) encoded(input, device string) (pageTimeline, error) {
	i, err1 := strconv.Atoi(input)
	dev, err2 := strconv.Atoi(device)
	if err1 != nil || err2 != nil || i < 0 || i >= len(s.run.Inputs) || s.run.Inputs[i] == nil {
		return pageTimeline{}, fmt.Errorf("no input %q with a device %q", input, device)
	}
	key := input + "/" + device
	s.mu.Lock()
	defer s.mu.Unlock()
	if tl, ok := s.cache[key]; ok {
		return tl, nil
	}
	r := s.run.Inputs[i]
	p, ok := r.Part.(*analyze.SnapshotReport)
	if !ok {
		return pageTimeline{}, fmt.Errorf("input %d has no allocator trace", i)
	}
	for k := range p.Details {
		if d := &p.Details[k]; d.Device == dev {
			tl, err := newPageTimeline(i, p, d)
			if err != nil {
				return pageTimeline{}, err
			}
			s.cache[key] = tl
			return tl, nil
		}
	}
	return pageTimeline{}, fmt.Errorf("input %d has no trace of device %d", i, dev)
}
