package main

import "github.com/memscan/memscan/internal/bytesize"

// sizeFlag is a byte-count flag that reads units ("512MiB", "20GiB", "2GB").
type sizeFlag int64

func (s *sizeFlag) String() string { return bytesize.Format(int64(*s)) }

func (s *sizeFlag) Set(v string) error {
	n, err := bytesize.Parse(v)
	if err != nil {
		return err
	}
	*s = sizeFlag(n)
	return nil
}

func (s *sizeFlag) Type() string { return "size" }
