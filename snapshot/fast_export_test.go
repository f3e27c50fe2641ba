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

// DecodeFastPickleHinted decodes with a size that is only claimed (PickleSource.SizeHint).
func DecodeFastPickleHinted(ctx context.Context, name string, r io.Reader, hint int64) (*Snapshot, error) {
	return decodeFastPickleSource(ctx, name, r, hint, true)
}

// DecodeFastPickleFlat decodes with the fast decoder, the flat-dict shortcut on or off, and returns how many
// dicts the shortcut read.
func DecodeFastPickleFlat(ctx context.Context, name string, r io.Reader, flat bool) (*Snapshot, int, error) {
	d := newFastDecoder(ctx, name, r, 0)
	d.noFlat = !flat
	s, err := d.run()
	return s, d.flatRead, err
}

// DecodeFastMapped decodes the pickle m holds, read in place.
var DecodeFastMapped = decodeFastMapped

// MappedStep is how often the mapped decoder tells what it has read.
const MappedStep = mappedStep
