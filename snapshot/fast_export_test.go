package snapshot

// Hooks for the external tests of the fast decoder (package snapshot_test), which import helpers that import
// this package.
var (
	DecodeFastPickle      = decodeFastPickle
	DecodeReferencePickle = decodePickleBytes
	ErrFastUnsupported    = errFastUnsupported
)

const FastCheckEvery = fastCheckEvery

var DecodeFastPickleSized = decodeFastPickleSized
