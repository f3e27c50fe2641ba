package input

import (
	"bytes"
	"errors"
	"io"
	"math/rand/v2"
	"testing"
	"testing/iotest"
)

func TestReadAhead(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	data := make([]byte, 3*readAheadChunkSize+12345)
	for i := range data {
		data[i] = byte(rng.Uint32())
	}
	for _, tc := range []struct {
		name string
		src  func() io.Reader
	}{
		{"whole reads", func() io.Reader { return bytes.NewReader(data) }},
		{"a byte at a time", func() io.Reader { return iotest.OneByteReader(bytes.NewReader(data)) }},
		{"half reads", func() io.Reader { return iotest.HalfReader(bytes.NewReader(data)) }},
		{"data with EOF", func() io.Reader { return iotest.DataErrReader(bytes.NewReader(data)) }},
		{"one chunk exactly", func() io.Reader { return bytes.NewReader(data[:readAheadChunkSize]) }},
		{"empty", func() io.Reader { return bytes.NewReader(nil) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			want := data
			if tc.name == "one chunk exactly" {
				want = data[:readAheadChunkSize]
			} else if tc.name == "empty" {
				want = nil
			}
			ra := NewReadAhead(tc.src())
			defer ra.Stop()
			// iotest.TestReader reads in several patterns and checks the reader keeps io.Reader's contract.
			if err := iotest.TestReader(ra, want); err != nil {
				t.Fatal(err)
			}
		})
	}
}

func TestReadAheadError(t *testing.T) {
	boom := errors.New("disk on fire")
	data := bytes.Repeat([]byte("x"), readAheadChunkSize+10)
	ra := NewReadAhead(io.MultiReader(bytes.NewReader(data), iotest.ErrReader(boom)))
	defer ra.Stop()
	got, err := io.ReadAll(ra)
	if !errors.Is(err, boom) || !bytes.Equal(got, data) {
		t.Fatalf("read %d bytes, err %v; want %d bytes, then %v", len(got), err, len(data), boom)
	}
	// The error stays.
	if _, err := ra.Read(make([]byte, 1)); !errors.Is(err, boom) {
		t.Errorf("read after the error: %v", err)
	}
}

// emptyReader returns nothing and no error, forever.
type emptyReader struct{}

func (emptyReader) Read([]byte) (int, error) { return 0, nil }

func TestReadAheadNoProgress(t *testing.T) {
	ra := NewReadAhead(emptyReader{})
	defer ra.Stop()
	if _, err := ra.Read(make([]byte, 10)); !errors.Is(err, io.ErrNoProgress) {
		t.Fatalf("err %v, want io.ErrNoProgress", err)
	}
}

func TestReadAheadStop(t *testing.T) {
	data := make([]byte, 20*readAheadChunkSize)
	r := bytes.NewReader(data)
	ra := NewReadAhead(r)
	if _, err := io.ReadFull(ra, make([]byte, 1000)); err != nil {
		t.Fatal(err)
	}
	ra.Stop()
	ra.Stop() // twice is fine
	// Once stopped it reads no further: at most the chunks it held and the one it was filling.
	if left := r.Len(); left < len(data)-(readAheadChunks+2)*readAheadChunkSize {
		t.Errorf("read %d bytes ahead of 1000 read", len(data)-left)
	}
	// What it had read ahead may still come out, then the end, never a hang.
	n, err := io.Copy(io.Discard, ra)
	if err == nil || n > int64((readAheadChunks+1)*readAheadChunkSize) {
		t.Errorf("after Stop: %d more bytes, err %v", n, err)
	}
}
