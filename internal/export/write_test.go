package export

import (
	"bytes"
	"context"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/memscan/memscan/snapshot"
)

// TestWriteDispatches checks that Write hands each format its own options: its output is byte for byte that of
// the format's writer called directly with them.
func TestWriteDispatches(t *testing.T) {
	ctx := context.Background()
	s := fixtureSnapshot()
	window := Window{Start: 1, End: 6}
	opt := Options{At: AtPeak, Rank: 3, Window: &window, TopN: 1, Classify: fixtureClassifier, Source: "rank3.pickle"}
	direct := map[Format]func(b *bytes.Buffer) ([]SiteBytes, error){
		FormatPprof: func(b *bytes.Buffer) ([]SiteBytes, error) {
			return nil, WritePprof(ctx, b, s, ProfileOptions{At: AtPeak, Classify: fixtureClassifier, Source: "rank3.pickle"})
		},
		FormatPerfetto: func(b *bytes.Buffer) ([]SiteBytes, error) {
			return nil, WritePerfetto(ctx, b, s, TraceOptions{Rank: 3, Classify: fixtureClassifier, Source: "rank3.pickle"})
		},
		FormatCollapsed: func(b *bytes.Buffer) ([]SiteBytes, error) { return nil, WriteCollapsed(ctx, b, s) },
		FormatJSON:      func(b *bytes.Buffer) ([]SiteBytes, error) { return nil, WriteJSON(ctx, b, s) },
		FormatSlice: func(b *bytes.Buffer) ([]SiteBytes, error) {
			return WriteSlice(ctx, b, s, SliceOptions{Window: &window, TopN: 1, Classify: fixtureClassifier})
		},
	}
	if len(direct) != len(Formats) {
		t.Fatalf("the test covers %d formats, Formats lists %d", len(direct), len(Formats))
	}
	for _, f := range Formats {
		t.Run(string(f), func(t *testing.T) {
			var got, want bytes.Buffer
			gotKept, err := Write(ctx, &got, s, f, opt)
			if err != nil {
				t.Fatal(err)
			}
			wantKept, err := direct[f](&want)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got.Bytes(), want.Bytes()) || !slices.Equal(gotKept, wantKept) {
				t.Errorf("Write differs from the %s writer (%d vs %d bytes, kept %v vs %v)", f, got.Len(), want.Len(), gotKept, wantKept)
			}
			if f == FormatSlice && len(gotKept) != 1 {
				t.Errorf("a top-1 slice kept %v", gotKept)
			}
		})
	}
	if _, err := Write(ctx, &bytes.Buffer{}, s, "svg", opt); err == nil || !strings.Contains(err.Error(), `unknown export format "svg" (want one of pprof, perfetto, collapsed, json, slice)`) {
		t.Errorf("unknown format: %v", err)
	}
}

func TestCaveat(t *testing.T) {
	traced := fixtureSnapshot()
	untraced := fixtureSnapshot()
	untraced.DeviceTraces = [][]snapshot.TraceEntry{nil, {}}
	w := &Window{Start: 0, End: 1}
	tests := []struct {
		name   string
		s      *snapshot.Snapshot
		format Format
		opt    Options
		want   string // a part of the caveat; empty: none
	}{
		{"peak without trace", untraced, FormatPprof, Options{At: AtPeak}, "no peak"},
		{"snapshot without trace", untraced, FormatPprof, Options{At: AtSnapshot}, ""},
		{"peak with trace", traced, FormatPprof, Options{At: AtPeak}, ""},
		{"window without trace", untraced, FormatSlice, Options{Window: w}, "--window has nothing to cut"},
		{"top without trace", untraced, FormatSlice, Options{TopN: 2}, ""},
		{"window with trace", traced, FormatSlice, Options{Window: w}, ""},
		{"perfetto without trace", untraced, FormatPerfetto, Options{At: AtPeak, Window: w}, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := Caveat(tc.s, tc.format, tc.opt)
			if (tc.want == "") != (got == "") || !strings.Contains(got, tc.want) {
				t.Errorf("Caveat = %q, want one containing %q", got, tc.want)
			}
		})
	}
}

// TestFormatBinary checks Binary against what each format writes: text formats write valid UTF-8 without NUL
// bytes, binary ones (gzip, pickle) do not.
func TestFormatBinary(t *testing.T) {
	s := fixtureSnapshot()
	for _, f := range Formats {
		var b bytes.Buffer
		if _, err := Write(context.Background(), &b, s, f, Options{TopN: 1}); err != nil {
			t.Fatal(err)
		}
		text := utf8.Valid(b.Bytes()) && !bytes.ContainsRune(b.Bytes(), 0)
		if f.Binary() == text {
			t.Errorf("%s.Binary() = %v, but its output is text: %v", f, f.Binary(), text)
		}
	}
}
