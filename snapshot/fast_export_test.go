package snapshot

import (
	"context"
	"io"
)

// Hooks for the external tests of the fast decoder (package snapshot_test), which import helpers that import
// this package.
var (
	DecodeFastPickle      = decodeFastPickle
	DecodeReferencePickle = decodePickleBytes
	ErrFastUnsupported    = errFastUnsupported
)

const FastCheckEvery = fastCheckEvery

var DecodeFastPickleSized = decodeFastPickleSized

// DecodeFastPickleFlat decodes with the fast decoder, the flat-dict shortcut on or off, and returns how many
// dicts the shortcut read.
func DecodeFastPickleFlat(ctx context.Context, name string, r io.Reader, flat bool) (*Snapshot, int, error) {
	d := newFastDecoder(ctx, name, r, 0)
	d.noFlat = !flat
	s, err := d.run()
	return s, d.flatRead, err
}
