package snapshot

import (
	"context"
	"time"
)

// boundCtx is the context of a test of a decoding bound: the decoders check it as they go, so a bound that no
// longer stops the input fails the test within a minute (these inputs take seconds, under the race detector too)
// instead of hanging the package until go test's own timeout.
func boundCtx() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), time.Minute)
}
