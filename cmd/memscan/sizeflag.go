package main

import "github.com/memscan/memscan/internal/units"

// sizeFlag is a byte-count flag that reads units ("512MiB", "20GiB", "2GB").
type sizeFlag int64

func (s *sizeFlag) String() string { return units.Bytes(int64(*s)) }

func (s *sizeFlag) Set(v string) error {
	n, err := units.ParseBytes(v)
	if err != nil {
		return err
	}
	*s = sizeFlag(n)
	return nil
}

func (s *sizeFlag) Type() string { return "size" }
