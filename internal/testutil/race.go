//go:build race

package testutil

// Race is true when the tests run under the race detector, which multiplies memory use and makes sync.Pool drop
// what is put back: memory bounds do not hold then and are skipped.
const Race = true
