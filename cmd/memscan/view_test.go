package main

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"
)

// syncBuffer is a bytes.Buffer the server goroutine and the test may use at once.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestViewServesThePage: memscan view FILE listens on a loopback port, serves the page with a timeline that it
// sends on request, and stops when its context ends; a run directory without a page is refused.
func TestViewServesThePage(t *testing.T) {
	snap := fixture(t, "testdata/example/rank0_memory_snapshot.pickle")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var stdout, stderr syncBuffer
	done := make(chan int, 1)
	go func() { done <- run(ctx, []string{"view", "--http", "127.0.0.1:0", snap}, &stdout, &stderr) }()
	addr := regexp.MustCompile(`http://127\.0\.0\.1:\d+/`)
	var url string
	for deadline := time.Now().Add(30 * time.Second); url == "" && time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		url = addr.FindString(stderr.String())
	}
	if url == "" {
		cancel()
		t.Fatalf("no address printed; stderr: %s", stderr.String())
	}
	get := func(path string) (int, string) {
		resp, err := http.Get(url + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, page := get(""); code != 200 || !strings.Contains(page, `data-src="timeline/0/0"`) {
		t.Errorf("GET / answered %d without the served timeline", code)
	}
	if code, meta := get("timeline/0/0/meta"); code != 200 || !strings.Contains(meta, `"peak_bytes":`) {
		t.Errorf("GET the timeline's meta answered %d: %.200s", code, meta)
	}
	if code, _ := get("timeline/0/0/data"); code != 200 {
		t.Errorf("GET the timeline's data answered %d", code)
	}
	cancel()
	select {
	case code := <-done:
		if code != exitOK {
			t.Errorf("view exited %d after its context ended: %s", code, stderr.String())
		}
	case <-time.After(10 * time.Second):
		t.Fatal("view did not stop when its context ended")
	}
	if code, _, stderr := runCLI(t, "view", "--http", "127.0.0.1:0", t.TempDir()); code != exitFailed || !strings.Contains(stderr, "has no index.html") {
		t.Errorf("a directory without a page: exit %d, %s", code, stderr)
	}
}
