package load

import (
	"context"

	"golang.org/x/sync/errgroup"
)

// Decoded is the outcome of decoding one file of a batch: exactly one of Input and Err is set.
type Decoded struct {
	Path  string
	Input *Input
	Err   error
}

// DecodeFiles decodes paths with at most jobs files in flight (one per rank is the usual tracer layout) and
// returns the results in the order of paths, whatever order they finished in. A file that fails does not stop
// the others; only cancellation of ctx does, and then the unfinished entries carry ctx's error.
func DecodeFiles(ctx context.Context, paths []string, jobs int) []Decoded {
	out := make([]Decoded, len(paths))
	if jobs < 1 {
		jobs = 1
	}
	var g errgroup.Group
	g.SetLimit(jobs)
	for i, p := range paths {
		out[i].Path = p
		if err := ctx.Err(); err != nil {
			out[i].Err = err
			continue
		}
		g.Go(func() error {
			if err := ctx.Err(); err != nil {
				out[i].Err = err
				return nil
			}
			in, err := DecodeFile(ctx, p)
			out[i].Input, out[i].Err = in, err
			return nil
		})
	}
	g.Wait() // the workers never return errors; each result holds its own
	return out
}
