package snapshot_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/memscan/memscan/internal/gen"
	"github.com/memscan/memscan/internal/input"
	"github.com/memscan/memscan/internal/testutil"
	"github.com/memscan/memscan/load"
	"github.com/memscan/memscan/trainlog"
)

// allocated runs f and returns the bytes it allocated on the heap (all goroutines, so tests using it do not run
// in parallel).
func allocated(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// TestDecodeSizeLimit feeds inputs that expand past the input size limit: gzip bombs of each input kind, with
// 1 GiB of content behind a small file, and a plain file larger than the limit. Each must fail with one error
// naming the file and the limit, after allocating a small multiple of the limit, never the content's size.
func TestDecodeSizeLimit(t *testing.T) {
	const (
		limit = 4 << 20
		fillN = 1024 // members of 1 MiB: 1 GiB of content
	)
	mib := func(b byte) []byte { return bytes.Repeat([]byte{b}, 1<<20) }
	tests := []struct {
		name       string
		head, fill []byte
		want       string // in the error
		tooLarge   bool   // the error wraps ErrInputTooLarge
	}{
		// The bomb of the report: a pickle header (PROTO, FRAME of 4 GiB) and zeros. The streaming decoder stops
		// at the first zero byte, an unknown opcode, without inflating the rest.
		{"pickle header and zeros", []byte("\x80\x04\x95\x00\x00\x00\x00\x01\x00\x00\x00"), mib(0), "byte 11: unknown pickle opcode 0x00", false},
		// A dict holding a DUP (which only the reference decoder handles) and then NONE opcodes: the reference
		// decoder would read it whole, so it is cut off at its share of the limit.
		{"pickle the fast decoder declines", []byte("\x80\x04}2"), mib('N'), "needs the reference pickle decoder", true},
		{"JSON", []byte(`{"segments": [`), mib(' '), "decompresses to more than the input size limit of 4.0 MiB (4194304 bytes)", true},
		{"log", []byte("step 1\n"), bytes.Repeat([]byte("no memory here\n"), 1<<16), "decompresses to more than the input size limit of 4.0 MiB", true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "bomb.gz")
			testutil.GzipBomb(t, path, tc.head, tc.fill, fillN)
			var err error
			alloc := allocated(func() {
				_, err = testutil.Bounded(t, func(ctx context.Context) (*load.Input, error) {
					return load.DecodeFileWith(ctx, path, load.Options{MaxInputSize: limit})
				})
			})
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.HasPrefix(err.Error(), path+": ") {
				t.Fatalf("err = %v, want %q naming the file", err, tc.want)
			}
			if got := errors.Is(err, input.ErrInputTooLarge); got != tc.tooLarge {
				t.Errorf("errors.Is(err, ErrInputTooLarge) = %v, want %v", got, tc.tooLarge)
			}
			if strings.Contains(err.Error(), "\n") {
				t.Errorf("error spans several lines: %q", err)
			}
			// The content is 1 GiB; decoding may hold the limit a few times over (buffers, the reference
			// decoder's copy), nothing near the content.
			if alloc > 8*limit+(16<<20) && !testutil.Race {
				t.Errorf("allocated %d bytes decoding %d bytes of content under a %d-byte limit", alloc, fillN<<20, limit)
			}
		})
	}
	t.Run("plain file over the limit", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "big.pickle")
		if err := os.WriteFile(path, make([]byte, 5000), 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := testutil.Bounded(t, func(ctx context.Context) (*load.Input, error) {
			return load.DecodeFileWith(ctx, path, load.Options{MaxInputSize: 4096})
		})
		want := path + ": 4.9 KiB (5000 bytes) is larger than the input size limit of 4.0 KiB (4096 bytes)"
		if err == nil || !errors.Is(err, input.ErrInputTooLarge) || !strings.HasPrefix(err.Error(), want) {
			t.Errorf("err = %v, want %q…", err, want)
		}
	})
}

// TestDecodeGzipFallback decodes a gzip-compressed snapshot that the fast decoder declines, in one and two gzip
// layers: the reference decoder gets the content by decompressing the file again.
func TestDecodeGzipFallback(t *testing.T) {
	data := declinedPickle()
	gz := testutil.Gzip
	for _, tc := range []struct {
		name string
		data []byte
	}{{"gzip", gz(data)}, {"gzip of gzip", gz(gz(data))}} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "s.pickle.gz")
			if err := os.WriteFile(path, tc.data, 0o644); err != nil {
				t.Fatal(err)
			}
			in, err := load.DecodeFile(context.Background(), path)
			if err != nil {
				t.Fatal(err)
			}
			checkDeclinedDecoded(t, in)
		})
	}
}

// TestDecodeOldPickles checks that pickles of protocols 0 and 1 are recognised as pickles (and refused, naming
// a global they ask for), while text that merely starts with similar letters is still read as a log.
func TestDecodeOldPickles(t *testing.T) {
	tests := []struct {
		name, data, want string
	}{
		{"protocol 0 GLOBAL", "cos\nsystem\n(S'echo hi'\ntR.", `byte 0: pickle (protocol 0 or 1): refused opcode GLOBAL (0x63) "os.system"`},
		{"protocol 0 INST", "(S'echo hi'\nios\nsystem\n.", `byte 12: pickle (protocol 0 or 1): refused opcode INST (0x69) "os.system"`},
		{"protocol 0 dict", "(dp0\nS'segments'\np1\n(lp2\nsS'x'\np3\nI1\ns.", "byte 0: a pickle of protocol 0 or 1 (it has no PROTO opcode)"},
		{"protocol 1 dict", "}q\x00(X\x08\x00\x00\x00segmentsq\x01]q\x02u.", "byte 0: a pickle of protocol 0 or 1"},
		{"protocol 1 GLOBAL after a dict", "}q\x00(cos\nsystem\nq\x01", `byte 4: pickle (protocol 0 or 1): refused opcode GLOBAL (0x63) "os.system"`},
		{"log starting with two words", "compiling\ndone\nstarting training\n", "no Megatron, DeepSpeed or torchtitan memory lines"},
		{"log starting with a parenthesis", "(rank 0) compiling\n", "no Megatron, DeepSpeed or torchtitan memory lines"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := load.Decode(context.Background(), "x.pkl", strings.NewReader(tc.data))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err = %v, want %q", err, tc.want)
			}
		})
	}
}

// TestDecodeNotSnapshotTop refuses pickles whose outermost value is not a snapshot's shape right where it goes
// wrong, reading a few opcodes of the file: 5 million NONE opcodes (the report had 5e7, decoded to an empty
// snapshot after 40 s and 2.4 GB) must not be read, let alone loaded.
func TestDecodeNotSnapshotTop(t *testing.T) {
	const n = 5_000_000
	tests := []struct {
		name     string
		data     []byte
		want     string
		maxAlloc uint64
	}{
		{"NONE stream", append(append([]byte{0x80, 4}, bytes.Repeat([]byte("N"), n)...), '.'), "byte 2: the top-level value is None", 1 << 20},
		{"pushes and pops", append(append([]byte{0x80, 4}, bytes.Repeat([]byte("N0"), n/2)...), 'N', '.'), "byte 2: the top-level value is None", 1 << 20},
		{"tuple under a MARK", append(append([]byte{0x80, 4, '('}, bytes.Repeat([]byte("K\x01"), n/2)...), 't', '.'), "byte 2: the top-level value is built under a MARK", 1 << 20},
		// The stack holds 2^20 values of 24 bytes before the refusal; growing it allocates about five times that.
		{"values stacked on a dict", append(append([]byte{0x80, 4, '}'}, bytes.Repeat([]byte("N"), n)...), '.'), "more than 1048576 values on the pickle stack", 160 << 20},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "x.pickle")
			if err := os.WriteFile(path, tc.data, 0o644); err != nil {
				t.Fatal(err)
			}
			var err error
			alloc := allocated(func() {
				_, err = testutil.Bounded(t, func(ctx context.Context) (*load.Input, error) { return load.DecodeFile(ctx, path) })
			})
			var de *input.Error
			if !errors.As(err, &de) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want an *input.Error saying %q", err, tc.want)
			}
			if alloc > tc.maxAlloc {
				t.Errorf("allocated %d bytes refusing a %d-byte file (bound %d)", alloc, len(tc.data), tc.maxAlloc)
			}
		})
	}
}

// repeatReader yields n copies of b without holding them.
type repeatReader struct {
	b byte
	n int64
}

func (r *repeatReader) Read(p []byte) (int, error) {
	if r.n <= 0 {
		return 0, io.EOF
	}
	k := min(int64(len(p)), r.n)
	for i := range p[:k] {
		p[i] = r.b
	}
	r.n -= k
	return int(k), nil
}

// TestDecodeLongFirstLine feeds logs whose first line is 100 MB: the error says the line is too long (the
// report got "invalid character 'R'" for one starting "[Rank 0]"), and reading it costs a bounded buffer.
func TestDecodeLongFirstLine(t *testing.T) {
	const n = 100 << 20
	for _, start := range []string{"[Rank 0] ", "Rank 0 "} {
		t.Run(start, func(t *testing.T) {
			r := io.MultiReader(strings.NewReader(start), &repeatReader{b: 'x', n: n}, strings.NewReader("\nhello\n"))
			var err error
			alloc := allocated(func() {
				_, err = testutil.Bounded(t, func(ctx context.Context) (*load.Input, error) { return load.Decode(ctx, "train.log", r) })
			})
			want := "train.log: byte 0: line 1: longer than 1048576 bytes, the limit for one log line"
			if err == nil || !strings.HasPrefix(err.Error(), want) || !errors.Is(err, trainlog.ErrLineTooLong) {
				t.Errorf("err = %v, want %q…", err, want)
			}
			if alloc > 16<<20 {
				t.Errorf("allocated %d bytes reading a %d-byte line", alloc, n)
			}
		})
	}
}

// TestDecodeMultiDeviceTraceRoom checks the room the decoder reserves for trace lists on a four-device snapshot
// read from a file: each list was once sized for the rest of the file, so four devices held 2.5 times the
// entries they needed (2.9× the file in RSS). Now the finished lists are trimmed and the rest of the file is
// shared among the devices still to come.
func TestDecodeMultiDeviceTraceRoom(t *testing.T) {
	path := filepath.Join(t.TempDir(), "d4.pickle")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	st, err := gen.Write(f, gen.Config{Seed: 1, Entries: 400_000, Devices: 4, Stacks: gen.StacksPython, ShareStack: true})
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		t.Fatal(err)
	}
	in, err := load.DecodeFile(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	var n, room int
	for _, tr := range in.Snapshot.DeviceTraces {
		n, room = n+len(tr), room+cap(tr)
	}
	if n != st.Entries {
		t.Fatalf("decoded %d trace entries, the generator wrote %d", n, st.Entries)
	}
	if float64(room) > 1.15*float64(n) {
		t.Errorf("trace lists reserve room for %d entries, %.2f× the %d decoded", room, float64(room)/float64(n), n)
	}
}
