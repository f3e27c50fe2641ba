// Package browser drives a headless Chromium (Debian's chromium package) for the tests and the page-load
// benchmark of memscan's interactive page: it loads a page, records every request the page makes and every
// script error it raises, and waits until the page says it has drawn (body[data-ready]).
package browser

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/performance"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
)

// ErrNoBrowser is returned by Start when no Chromium binary is installed.
var ErrNoBrowser = errors.New("no Chromium found (install Debian's chromium package)")

// Find returns the path of an installed Chromium, "" when there is none.
func Find() string {
	for _, b := range []string{os.Getenv("MEMSCAN_CHROMIUM"), "/usr/bin/chromium", "/usr/bin/chromium-browser", "/usr/bin/google-chrome"} {
		if b == "" {
			continue
		}
		if _, err := os.Stat(b); err == nil {
			return b
		}
	}
	return ""
}

// Session is one browser tab.
type Session struct {
	Ctx    context.Context
	cancel []context.CancelFunc

	mu       sync.Mutex
	requests []string
	errs     []string
}

// Start opens a headless browser with a window of width × height CSS pixels.
func Start(ctx context.Context, width, height int) (*Session, error) {
	bin := Find()
	if bin == "" {
		return nil, ErrNoBrowser
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(bin), chromedp.NoSandbox, chromedp.DisableGPU, chromedp.WindowSize(width, height),
		chromedp.Flag("allow-file-access-from-files", true))
	actx, c1 := chromedp.NewExecAllocator(ctx, opts...)
	tctx, c2 := chromedp.NewContext(actx)
	s := &Session{Ctx: tctx, cancel: []context.CancelFunc{c2, c1}}
	err := chromedp.Listen(tctx, func(ev any) {
		s.mu.Lock()
		defer s.mu.Unlock()
		switch e := ev.(type) {
		case *network.EventRequestWillBeSent:
			s.requests = append(s.requests, e.Request.URL)
		case *runtime.EventExceptionThrown:
			msg := e.ExceptionDetails.Text
			if e.ExceptionDetails.Exception != nil {
				msg += " " + e.ExceptionDetails.Exception.Description
			}
			s.errs = append(s.errs, msg)
		case *runtime.EventConsoleAPICalled:
			if e.Type == runtime.ConsoleAPICalledTypeError || e.Type == runtime.ConsoleAPICalledTypeWarning {
				var parts []string
				for _, a := range e.Args {
					parts = append(parts, strings.Trim(string(a.Value), `"`)+a.Description)
				}
				s.errs = append(s.errs, "console "+string(e.Type)+": "+strings.Join(parts, " "))
			}
		}
	})
	if err == nil {
		_, err = chromedp.Call(tctx, network.Enable, network.EnableParams{})
	}
	if err != nil {
		s.Close()
		return nil, fmt.Errorf("starting %s: %w", bin, err)
	}
	return s, nil
}

// Close ends the browser.
func (s *Session) Close() {
	for _, c := range s.cancel {
		c()
	}
}

// Load opens url and waits until the page has drawn every timeline (body[data-ready]), or the context ends; it
// returns the time from navigation to that moment.
func (s *Session) Load(url string) (time.Duration, error) {
	t0 := time.Now()
	err := chromedp.Do(s.Ctx, chromedp.Navigate(url), chromedp.WaitReady(`body[data-ready="1"]`))
	if err != nil {
		return 0, fmt.Errorf("loading %s: %w (script errors: %v)", url, err, s.Errors())
	}
	return time.Since(t0), nil
}

// Requests returns the URLs the page asked for, the page's own included.
func (s *Session) Requests() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.requests...)
}

// ExternalRequests returns the requests other than the page itself (url) and data: URIs: anything here went out
// of the page.
func (s *Session) ExternalRequests(url string) []string {
	var out []string
	for _, r := range s.Requests() {
		if r != url && !strings.HasPrefix(r, "data:") {
			out = append(out, r)
		}
	}
	return out
}

// Errors returns the script errors and console errors or warnings seen so far.
func (s *Session) Errors() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.errs...)
}

// CPU returns the CPU seconds the tab's renderer process and its main thread have used so far (Chromium's
// ProcessTime and ThreadTime): unlike wall time they do not grow while other work holds the machine's cores.
func (s *Session) CPU() (process, thread float64, err error) {
	if _, err := chromedp.Call(s.Ctx, performance.Enable, performance.EnableParams{}); err != nil {
		return 0, 0, err
	}
	res, err := chromedp.Call(s.Ctx, performance.GetMetrics, cdp.Empty{})
	if err != nil {
		return 0, 0, err
	}
	for _, m := range res.Metrics {
		switch m.Name {
		case "ProcessTime":
			process = m.Value
		case "ThreadTime":
			thread = m.Value
		}
	}
	return process, thread, nil
}
