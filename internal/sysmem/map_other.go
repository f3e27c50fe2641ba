//go:build !linux

package sysmem

import (
	"errors"
	"os"
)

// Mapping is part of a file mapped into memory; this system does not map files (see the Linux version).
type Mapping struct{}

// MapFile fails here: readers read the file through its reader instead.
func MapFile(f *os.File, off, n int64) (*Mapping, error) { return nil, errors.ErrUnsupported }

// Bytes returns nothing: no Mapping is made here.
func (m *Mapping) Bytes() []byte { return nil }

// Reading does nothing.
func (m *Mapping) Reading(at, ahead int) {}

// Close does nothing.
func (m *Mapping) Close() error { return nil }
