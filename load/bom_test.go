package load_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/memscan/memscan/internal/input"
	"github.com/memscan/memscan/load"
)

// TestByteOrderMark: every text input (tracer JSON, a memory timeline, a snapshot's JSON rendition, a training
// log) decodes the same with a UTF-8 byte order mark as without, byte offsets in errors included, as config and
// rule files do. The tracer decoder used to reject a BOM while the rule parser accepted one.
func TestByteOrderMark(t *testing.T) {
	files := []string{
		filepath.Join("..", "tracer", "testdata", "small_rank0.json"),
		filepath.Join("..", "memtimeline", "testdata", "small_memory_timeline.json"),
		filepath.Join("..", "trainlog", "testdata", "megatron.log"),
		filepath.Join("..", "trainlog", "testdata", "deepspeed.log"),
	}
	for _, p := range files {
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		plain, err := load.Decode(context.Background(), "rank0.json", bytes.NewReader(data))
		if err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		withBOM, err := load.Decode(context.Background(), "rank0.json", bytes.NewReader(append([]byte("\uFEFF"), data...)))
		if err != nil {
			t.Errorf("%s with a BOM: %v", p, err)
			continue
		}
		// Offsets and labels shift by the BOM's three bytes, which the decoders read as spaces; compare the rest.
		if plain.Format != withBOM.Format || !reflect.DeepEqual(plain.Tracer, withBOM.Tracer) || !reflect.DeepEqual(plain.Timeline, withBOM.Timeline) ||
			(plain.Log == nil) != (withBOM.Log == nil) || plain.Log != nil && len(plain.Log.Records) != len(withBOM.Log.Records) {
			t.Errorf("%s decodes differently with a BOM", p)
		}
	}
	// An error's byte offset is the file's, BOM included: three bytes later than without it.
	bad := []byte("[[1, 2], [[0, 1.5]]]")
	var without, with *input.Error
	_, err := load.Decode(context.Background(), "t.json", bytes.NewReader(bad))
	_, errBOM := load.Decode(context.Background(), "t.json", bytes.NewReader(append([]byte("\uFEFF"), bad...)))
	if !errors.As(err, &without) || !errors.As(errBOM, &with) || with.Offset != without.Offset+3 || with.Field != without.Field {
		t.Errorf("error with a BOM %v, without %v: want the same three bytes later", errBOM, err)
	}
}
