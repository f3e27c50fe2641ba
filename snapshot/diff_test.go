package snapshot_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/memscan/memscan/internal/gen"
	"github.com/memscan/memscan/internal/testutil"
	"github.com/memscan/memscan/snapshot"
)

// The differential tests hold the fast decoder to the reference decoder (gopickle + the converter): on every
// input, both produce the same model, or both fail. The fast decoder may also decline (snapshot.ErrFastUnsupported), in
// which case Decode uses the reference; declining is counted and must never happen on real or generated files.

// diffOutcome compares the two decoders on data. It returns whether the fast decoder declined.
func diffOutcome(t *testing.T, name string, data []byte) (declined bool) {
	t.Helper()
	ctx := context.Background()
	fast, ferr := snapshot.DecodeFastPickle(ctx, name, bytes.NewReader(data))
	ref, rerr := snapshot.DecodeReferencePickle(ctx, name, data)
	if errors.Is(ferr, snapshot.ErrFastUnsupported) {
		return true
	}
	switch {
	case ferr != nil && rerr != nil:
		return false
	case ferr != nil:
		t.Fatalf("%s: fast decoder failed but the reference succeeded: %v", name, ferr)
	case rerr != nil:
		t.Fatalf("%s: reference failed but the fast decoder succeeded: %v", name, rerr)
	}
	if path, a, b := firstDiff(reflect.ValueOf(fast), reflect.ValueOf(ref), "Snapshot"); path != "" {
		t.Fatalf("%s: models differ at %s: fast %s, reference %s", name, path, a, b)
	}
	return false
}

// firstDiff walks two values and names the first difference (reflect.DeepEqual only says whether).
func firstDiff(a, b reflect.Value, path string) (string, string, string) {
	if a.Kind() != b.Kind() {
		return path, a.Kind().String(), b.Kind().String()
	}
	switch a.Kind() {
	case reflect.Pointer:
		if a.IsNil() || b.IsNil() {
			if a.IsNil() != b.IsNil() {
				return path, fmt.Sprintf("nil=%v", a.IsNil()), fmt.Sprintf("nil=%v", b.IsNil())
			}
			return "", "", ""
		}
		return firstDiff(a.Elem(), b.Elem(), path)
	case reflect.Struct:
		for i := range a.NumField() {
			if p, x, y := firstDiff(a.Field(i), b.Field(i), path+"."+a.Type().Field(i).Name); p != "" {
				return p, x, y
			}
		}
	case reflect.Slice:
		if a.IsNil() != b.IsNil() {
			return path, fmt.Sprintf("nil=%v len=%d", a.IsNil(), a.Len()), fmt.Sprintf("nil=%v len=%d", b.IsNil(), b.Len())
		}
		if a.Len() != b.Len() {
			return path, fmt.Sprintf("len %d", a.Len()), fmt.Sprintf("len %d", b.Len())
		}
		for i := range a.Len() {
			if p, x, y := firstDiff(a.Index(i), b.Index(i), fmt.Sprintf("%s[%d]", path, i)); p != "" {
				return p, x, y
			}
		}
	case reflect.Array:
		for i := range a.Len() {
			if p, x, y := firstDiff(a.Index(i), b.Index(i), fmt.Sprintf("%s[%d]", path, i)); p != "" {
				return p, x, y
			}
		}
	case reflect.Map:
		if !reflect.DeepEqual(a.Interface(), b.Interface()) {
			return path, fmt.Sprint(a.Interface()), fmt.Sprint(b.Interface())
		}
	default:
		if !reflect.DeepEqual(a.Interface(), b.Interface()) {
			return path, fmt.Sprint(a.Interface()), fmt.Sprint(b.Interface())
		}
	}
	return "", "", ""
}

// pickleFixtures lists the pickles among the package's fixtures (content-sniffed, as Decode does).
func pickleFixtures(t *testing.T) []string {
	t.Helper()
	var out []string
	_ = filepath.WalkDir("testdata", func(p string, de os.DirEntry, err error) error {
		if err != nil || de.IsDir() || strings.Contains(p, string(filepath.Separator)+"fuzz"+string(filepath.Separator)) {
			return nil
		}
		f, err := os.Open(p)
		if err != nil {
			return nil
		}
		defer f.Close()
		var head [1]byte
		if n, _ := f.Read(head[:]); n == 1 && head[0] == 0x80 {
			out = append(out, p)
		}
		return nil
	})
	return out
}

func TestDiffFixtures(t *testing.T) {
	files := pickleFixtures(t)
	if len(files) == 0 {
		t.Skip("no pickle fixtures in testdata")
	}
	for _, p := range files {
		t.Run(filepath.Base(p), func(t *testing.T) {
			data, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			// Fixtures may be deliberately malformed or unusual, so declining is allowed; it is logged.
			if diffOutcome(t, p, data) {
				_, err := snapshot.DecodeFastPickle(context.Background(), p, bytes.NewReader(data))
				t.Logf("fast decoder declined, reference used: %v", err)
			}
		})
	}
}

func TestDiffRealSnapshots(t *testing.T) {
	dir := testutil.SharedDir(t, "real_snapshots")
	files, _ := filepath.Glob(filepath.Join(dir, "*.pickle"))
	if len(files) == 0 {
		t.Fatalf("no pickles in %s", dir)
	}
	for _, p := range files {
		t.Run(filepath.Base(p), func(t *testing.T) {
			data, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			if diffOutcome(t, filepath.Base(p), data) {
				_, err := snapshot.DecodeFastPickle(context.Background(), p, bytes.NewReader(data))
				t.Fatalf("fast decoder declined a real snapshot: %v", err)
			}
		})
	}
}

// TestDiffGenerated covers every generator shape (stack depths, shared and unshared frame lists, several
// devices, expandable segments, OOMs, every torch generation's keys).
func TestDiffGenerated(t *testing.T) {
	for _, cfg := range generatedConfigs() {
		t.Run(cfg.Name, func(t *testing.T) {
			var buf bytes.Buffer
			if _, err := gen.Write(&buf, cfg); err != nil {
				t.Fatal(err)
			}
			if diffOutcome(t, cfg.Name, buf.Bytes()) {
				_, err := snapshot.DecodeFastPickle(context.Background(), cfg.Name, bytes.NewReader(buf.Bytes()))
				t.Fatalf("fast decoder declined a generated snapshot: %v", err)
			}
		})
	}
}

// generatedConfigs are small generator settings spanning its options.
func generatedConfigs() []gen.Config {
	var out []gen.Config
	for _, g := range gen.Generations() {
		for _, stacks := range []gen.Stacks{gen.StacksNone, gen.StacksPython, gen.StacksAll} {
			for _, shared := range []bool{true, false} {
				out = append(out, gen.Config{
					Name:       fmt.Sprintf("%s-%s-shared=%v", g, stacks, shared),
					Seed:       int64(len(out) + 1),
					Generation: g,
					Devices:    2,
					Entries:    300,
					Stacks:     stacks,
					ShareStack: shared,
					Expandable: len(out)%2 == 0,
					OOM:        len(out)%3 == 0,
				})
			}
		}
	}
	return out
}

// FuzzFastDecode runs both decoders on arbitrary bytes: neither may panic or hang, and they must agree.
func FuzzFastDecode(f *testing.F) {
	f.Add(minimal().Bytes())
	for i, cfg := range generatedConfigs() {
		if i%5 != 0 || cfg.Stacks == gen.StacksAll {
			continue // a few small seeds keep the fuzzer fast
		}
		cfg.Entries = 6
		cfg.Devices = 1
		var buf bytes.Buffer
		if _, err := gen.Write(&buf, cfg); err == nil {
			f.Add(buf.Bytes())
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) == 0 || data[0] != 0x80 {
			return // Decode only sends pickles here
		}
		diffOutcome(t, "fuzz.pickle", data)
		mappedOutcome(t, "fuzz.pickle", data)
	})
}
