package snapshot_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/memscan/memscan/internal/gen"
	"github.com/memscan/memscan/internal/input"
	"github.com/memscan/memscan/internal/sysmem"
	"github.com/memscan/memscan/snapshot"
)

// memPickle is a pickle in memory handed to the mapped decoder, recording what it says it has read.
type memPickle struct {
	b        []byte
	consumed []int64
}

func (m *memPickle) Bytes() []byte      { return m.b }
func (m *memPickle) Consumed(off int64) { m.consumed = append(m.consumed, off) }
func (m *memPickle) Close() error       { return nil }

// mappedOutcome checks that the fast decoder reading data in place (a file's mapping) ends as it ends reading
// data through a reader: the same model, or the same error. It returns what the decoder was handed (with what it
// said it had read) and its error.
func mappedOutcome(t *testing.T, name string, data []byte) (*memPickle, error) {
	t.Helper()
	ctx := context.Background()
	streamed, serr := snapshot.DecodeFastPickle(ctx, name, bytes.NewReader(data))
	m := &memPickle{b: data}
	mapped, merr := snapshot.DecodeFastMapped(ctx, name, m)
	switch {
	case serr != nil || merr != nil:
		if serr == nil || merr == nil || serr.Error() != merr.Error() {
			t.Fatalf("%s: streamed %v, mapped %v", name, serr, merr)
		}
	default:
		if path, a, b := firstDiff(reflect.ValueOf(mapped), reflect.ValueOf(streamed), "Snapshot"); path != "" {
			t.Fatalf("%s: models differ at %s: mapped %s, streamed %s", name, path, a, b)
		}
	}
	return m, merr
}

// unframed returns pickle p (protocol 4, every opcode after PROTO inside a FRAME, as PyTorch and the generator
// write them) with its FRAME opcodes taken out: the same pickle, unframed.
func unframed(t *testing.T, p []byte) []byte {
	t.Helper()
	const opFrame = 0x95
	out := append([]byte(nil), p[:2]...)
	for i := 2; i < len(p); {
		if p[i] != opFrame {
			return append(out, p[i:]...)
		}
		n := int(binary.LittleEndian.Uint64(p[i+1:]))
		out = append(out, p[i+9:i+9+n]...)
		i += 9 + n
	}
	return out
}

// TestMappedDecode: the decoder reading a pickle in place builds the model the streaming decoder builds, with or
// without frames, tells what it has read at least every MappedStep bytes and never before what it read already,
// and fails a truncated pickle as the streaming decoder does.
func TestMappedDecode(t *testing.T) {
	if testing.Short() {
		t.Skip("decodes a 170,000-entry snapshot several times")
	}
	var buf bytes.Buffer
	if _, err := gen.Write(&buf, gen.Config{Name: "mapped", Seed: 3, Entries: 170000, Stacks: gen.StacksPython, ShareStack: true}); err != nil {
		t.Fatal(err)
	}
	framed := buf.Bytes()
	plain := unframed(t, framed)
	if len(plain) >= len(framed) || len(framed) < 3*snapshot.MappedStep {
		t.Fatalf("pickle of %d bytes, %d unframed: want several steps of %d and frames", len(framed), len(plain), snapshot.MappedStep)
	}
	for _, tc := range []struct {
		name string
		p    []byte
	}{{"framed", framed}, {"unframed", plain}} {
		t.Run(tc.name, func(t *testing.T) {
			m, err := mappedOutcome(t, "p", tc.p)
			if err != nil {
				t.Fatal(err)
			}
			last := int64(0)
			for _, off := range m.consumed {
				if off < last+snapshot.MappedStep || off > int64(len(tc.p)) {
					t.Fatalf("told of %d after %d (step %d, %d bytes): %v", off, last, snapshot.MappedStep, len(tc.p), m.consumed)
				}
				last = off
			}
			if int64(len(tc.p))-last > 2*snapshot.MappedStep {
				t.Errorf("last told of %d of %d bytes: %v", last, len(tc.p), m.consumed)
			}
			for _, cut := range []int{len(tc.p) / 2, len(tc.p) - 1} {
				if _, err := mappedOutcome(t, "p", tc.p[:cut]); err == nil {
					t.Errorf("the pickle cut at %d of %d bytes decoded", cut, len(tc.p))
				}
			}
		})
	}
}

// TestMappedFileShrunk: a file cut short while its mapping is read (another program rewriting it) is an error
// naming the file and where its bytes ended, not a crash.
func TestMappedFileShrunk(t *testing.T) {
	var buf bytes.Buffer
	if _, err := gen.Write(&buf, gen.Config{Name: "shrunk", Seed: 5, Entries: 20000}); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "rank0.pickle")
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	m, err := sysmem.MapFile(f, 0, int64(buf.Len()))
	if err != nil {
		t.Skipf("cannot map a file here: %v", err)
	}
	defer m.Close()
	keep := int64(4 * os.Getpagesize())
	if err := f.Truncate(keep); err != nil {
		t.Fatal(err)
	}
	_, err = snapshot.DecodeFastMapped(context.Background(), path, &memPickle{b: m.Bytes()})
	var ie *input.Error
	if !errors.As(err, &ie) || ie.File != path || ie.Offset != keep || !strings.Contains(ie.Msg, "changed while being read") {
		t.Fatalf("decoding a file cut to %d bytes: %v", keep, err)
	}
}

// TestMappedTruncatedFile: a truncated pickle read in place from its file's read-only mapping fails as the
// streaming decoder fails it (the decoder never writes to the bytes it is given).
func TestMappedTruncatedFile(t *testing.T) {
	var buf bytes.Buffer
	if _, err := gen.Write(&buf, gen.Config{Name: "cut", Seed: 9, Entries: 3000}); err != nil {
		t.Fatal(err)
	}
	cut := buf.Bytes()[:buf.Len()*2/3]
	path := filepath.Join(t.TempDir(), "rank0.pickle")
	if err := os.WriteFile(path, cut, 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	m, err := sysmem.MapFile(f, 0, int64(len(cut)))
	if err != nil {
		t.Skipf("cannot map a file here: %v", err)
	}
	defer m.Close()
	if _, err := mappedOutcome(t, path, m.Bytes()); err == nil {
		t.Error("a truncated pickle decoded from its mapping")
	}
}
