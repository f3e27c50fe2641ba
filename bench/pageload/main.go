// Command pageload measures memscan's interactive page in headless Chromium: the page's size, the time from
// navigation until every timeline in view is drawn (body[data-ready]) and the renderer's CPU time over it (which,
// unlike the wall time, does not grow while other work holds the cores), the requests it made beyond itself and
// its script errors; with -shot it saves a screenshot of the first screen. bench/page.sh runs it on generated and real
// snapshots.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/memscan/memscan/internal/browser"
)

func main() {
	shot := flag.String("shot", "", "write a PNG screenshot of the first screen to this file")
	zoomShot := flag.String("zoom-shot", "", "write a PNG screenshot of the first timeline zoomed around its peak, with the details of the peak's moment shown, to this file")
	runs := flag.Int("runs", 3, "loads to time (the median is reported)")
	flag.Usage = func() { fmt.Fprintln(os.Stderr, "usage: pageload [-shot FILE] [-runs N] PAGE.html") }
	flag.Parse()
	if flag.NArg() != 1 {
		flag.Usage()
		os.Exit(1)
	}
	if err := run(flag.Arg(0), *shot, *zoomShot, *runs); err != nil {
		fmt.Fprintln(os.Stderr, "pageload:", err)
		os.Exit(1)
	}
}

func run(page, shot, zoomShot string, runs int) error {
	abs, err := filepath.Abs(page)
	if err != nil {
		return err
	}
	fi, err := os.Stat(abs)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	s, err := browser.Start(ctx, 1366, 900)
	if err != nil {
		return err
	}
	defer s.Close()
	url := "file://" + abs
	var times, cpus []time.Duration
	var inPage string
	for range max(1, runs) {
		p0, _, err := s.CPU()
		if err != nil {
			return err
		}
		d, err := s.Load(url)
		if err != nil {
			return err
		}
		p1, _, err := s.CPU()
		if err != nil {
			return err
		}
		if p1 < p0 { // the page got a fresh renderer process
			p0 = 0
		}
		times = append(times, d)
		cpus = append(cpus, time.Duration((p1-p0)*float64(time.Second)))
		inPage, err = chromedp.Run(s.Ctx, chromedp.Evaluate[string](`document.body.dataset.loadMs`))
		if err != nil {
			return err
		}
	}
	med := median(times)
	events, err := chromedp.Run(s.Ctx, chromedp.Evaluate[string](`Array.from(document.querySelectorAll('.timeline')).map(e => e.dataset.events).join('+') || '0'`))
	if err != nil {
		return err
	}
	fmt.Printf("page %s: %.2f MB, timelines of %s events, load+draw %.0f ms (median of %d; %.0f ms of it in the page's script; renderer CPU %.0f ms), external requests %d, script errors %d\n",
		filepath.Base(page), float64(fi.Size())/1e6, events, float64(med.Microseconds())/1000, len(times), atof(inPage),
		float64(median(cpus).Microseconds())/1000, len(s.ExternalRequests(url)), len(s.Errors()))
	timing, err := chromedp.Run(s.Ctx, chromedp.Evaluate[string](`Array.from(document.querySelectorAll('.timeline')).map(e => e.id + ': ' + e.dataset.timing + ', first draw ' + e.dataset.drawMs + ' ms').join('\n')`))
	if err != nil {
		return err
	}
	fmt.Println(timing)
	for _, r := range s.ExternalRequests(url) {
		fmt.Println("  request:", r)
	}
	for _, e := range s.Errors() {
		fmt.Println("  error:", e)
	}
	if shot != "" {
		png, err := chromedp.Run(s.Ctx, chromedp.CaptureScreenshot())
		if err != nil {
			return err
		}
		if err := os.WriteFile(shot, png, 0o644); err != nil {
			return err
		}
	}
	if zoomShot != "" {
		// Zoom as a person would: drag across the peak's neighbourhood, then point at the peak.
		js := `(() => { const root = document.querySelector('.timeline'), v = root.view, m = v.m;
			const span = Math.max(200, Math.round(m.n / 80));
			root.scrollIntoView({block: 'start'});
			v.zoomEvents(Math.max(0, m.peakAt - span), Math.min(m.n, m.peakAt + span));
			v.pinned = true; root.classList.add('tl-pinned'); v.hover(m.peakAt, true);
			return 'ok'; })()`
		if _, err := chromedp.Run(s.Ctx, chromedp.Evaluate[string](js)); err != nil {
			return err
		}
		png, err := chromedp.Run(s.Ctx, chromedp.CaptureScreenshot())
		if err != nil {
			return err
		}
		return os.WriteFile(zoomShot, png, 0o644)
	}
	return nil
}

func median(ds []time.Duration) time.Duration {
	s := append([]time.Duration(nil), ds...)
	for i := range s {
		for j := i + 1; j < len(s); j++ {
			if s[j] < s[i] {
				s[i], s[j] = s[j], s[i]
			}
		}
	}
	return s[len(s)/2]
}

func atof(s string) float64 {
	var f float64
	fmt.Sscanf(s, "%g", &f)
	return f
}
