package browser

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestSessionSeesRequestsAndErrors: a page that asks a loopback address for an image and throws is caught on
// both counts, so the page tests' "no request, no error" checks can fail.
func TestSessionSeesRequestsAndErrors(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	s, err := Start(ctx, 800, 600)
	if errors.Is(err, ErrNoBrowser) {
		t.Skip("no Chromium installed (apt-get install chromium): skipping")
	}
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	page := filepath.Join(t.TempDir(), "p.html")
	html := `<!DOCTYPE html><html><body><img src="http://127.0.0.1:9/x.png"><script>
document.body.dataset.ready = "1"; setTimeout(function () { throw new Error("boom"); }, 0);</script></body></html>`
	if err := os.WriteFile(page, []byte(html), 0o644); err != nil {
		t.Fatal(err)
	}
	url := "file://" + page
	if _, err := s.Load(url); err != nil {
		t.Fatal(err)
	}
	var sawImage, sawError bool
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline) && !(sawImage && sawError); time.Sleep(20 * time.Millisecond) {
		sawImage = strings.Contains(strings.Join(s.ExternalRequests(url), " "), "127.0.0.1:9/x.png")
		sawError = strings.Contains(strings.Join(s.Errors(), " "), "boom")
	}
	if !sawImage {
		t.Errorf("the image request was not seen: %v", s.Requests())
	}
	if !sawError {
		t.Errorf("the script error was not seen: %v", s.Errors())
	}
}
