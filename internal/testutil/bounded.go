package testutil

import (
	"context"
	"testing"
	"time"
)

// BoundTimeout is how long a test of an input bound may take: ample for inputs of tens of megabytes on a loaded
// machine (ten times that under the race detector), yet seconds where go test would wait ten minutes before it
// killed a package whose bound had regressed into an endless read loop.
func BoundTimeout() time.Duration {
	if Race {
		return 300 * time.Second
	}
	return 30 * time.Second
}

// Bounded runs f with a context that ends after BoundTimeout and returns what f returns. Decoders check the
// context as they read, so a bound that no longer stops the input fails with the context's error; a loop that
// never reads again fails the test a few seconds past the deadline. f runs on a goroutine of its own and must not
// call t.Fatal or t.FailNow.
func Bounded[T any](t testing.TB, f func(ctx context.Context) (T, error)) (T, error) {
	t.Helper()
	limit := BoundTimeout()
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	type result struct {
		v   T
		err error
	}
	done := make(chan result, 1)
	go func() {
		v, err := f(ctx)
		done <- result{v, err}
	}()
	select {
	case r := <-done:
		return r.v, r.err
	case <-time.After(limit + 5*time.Second):
		t.Fatalf("still running 5s after the context's deadline of %v: a bound no longer stops the input", limit)
		panic("unreachable")
	}
}
