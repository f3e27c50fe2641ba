package export

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/google/pprof/profile"
)

func TestBuildProfileFixture(t *testing.T) {
	tests := []struct {
		at          At
		wantBytes   int64 // requested bytes of live blocks, by hand from the fixture
		wantObjects int64
		wantByCat   map[string]int64
	}{
		// Snapshot: active_allocated blocks b1 (1000), b3 (10,000,000) and the legacy block (3000); b4 is pending free.
		{AtSnapshot, 1000 + 10000000 + 3000, 3, map[string]int64{"activation": 1000, "optimizer": 10003000}},
		// Peak of device 0 is after event 5: b1 (1000, before the trace), the block freed at event 8 (777, before the
		// trace), b3 (10,000,000) and b4 (10 MiB); device 1 has no trace, so its snapshot block (3000) counts.
		{AtPeak, 1000 + 777 + 10000000 + 10*mib + 3000, 5, map[string]int64{"activation": 1000 + 777 + 10*mib, "optimizer": 10003000}},
	}
	for _, tc := range tests {
		t.Run(string(tc.at), func(t *testing.T) {
			var buf bytes.Buffer
			err := WritePprof(context.Background(), &buf, fixtureSnapshot(), ProfileOptions{At: tc.at, Classify: fixtureClassifier, Source: "fixture"})
			if err != nil {
				t.Fatal(err)
			}
			if b := buf.Bytes(); len(b) < 2 || b[0] != 0x1f || b[1] != 0x8b {
				t.Fatal("profile is not gzipped")
			}
			p, err := profile.Parse(&buf)
			if err != nil {
				t.Fatal(err)
			}
			if got := p.SampleType[1]; got.Type != "inuse_space" || got.Unit != "bytes" || p.SampleType[0].Type != "inuse_objects" {
				t.Errorf("sample types %v", p.SampleType)
			}
			var objs, space int64
			byCat := map[string]int64{}
			for _, s := range p.Sample {
				objs += s.Value[0]
				space += s.Value[1]
				byCat[s.Label["category"][0]] += s.Value[1]
				if len(s.Label["stream"]) != 1 || len(s.Label["site"]) != 1 {
					t.Errorf("sample labels %v", s.Label)
				}
				for _, l := range s.Location {
					if strings.Contains(l.Line[0].Function.Name, "unwind") {
						t.Errorf("filtered frame %q kept", l.Line[0].Function.Name)
					}
				}
			}
			if objs != tc.wantObjects || space != tc.wantBytes {
				t.Errorf("objects %d bytes %d, want %d and %d", objs, space, tc.wantObjects, tc.wantBytes)
			}
			for k, v := range tc.wantByCat {
				if byCat[k] != v {
					t.Errorf("category %s: %d bytes, want %d", k, byCat[k], v)
				}
			}
		})
	}
}

func TestPprofLeafIsInnermostKeptFrame(t *testing.T) {
	p, err := BuildProfile(context.Background(), fixtureSnapshot(), ProfileOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range p.Sample {
		leaf := s.Location[0].Line[0]
		site := s.Label["site"][0]
		if want := leaf.Function.Filename + ":" + strconv.FormatInt(leaf.Line, 10) + ":" + leaf.Function.SystemName; site != want {
			t.Errorf("site label %q, leaf %q", site, want)
		}
	}
}

// TestGoToolPprofTop runs the real pprof front end on an exported profile: -top must list the hand-computed flat
// bytes per site (leaf), and -diff_base against itself must be empty.
func TestGoToolPprofTop(t *testing.T) {
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("go not on PATH: cannot run go tool pprof")
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "mem.pb.gz")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := WritePprof(context.Background(), f, fixtureSnapshot(), ProfileOptions{At: AtSnapshot}); err != nil {
		t.Fatal(err)
	}
	f.Close()
	out, err := exec.Command(goBin, "tool", "pprof", "-top", "-nodefraction=0", "-unit=B", path).CombinedOutput()
	if err != nil {
		t.Fatalf("go tool pprof: %v\n%s", err, out)
	}
	// Flat bytes per leaf function: opt.py:step holds b3 and the legacy block, model.py:forward holds b1.
	for _, want := range [][2]string{{"10003000B", "opt.py:step"}, {"1000B", "model.py:forward"}} {
		if !hasTopRow(string(out), want[0], want[1]) {
			t.Errorf("pprof -top lacks %s %s:\n%s", want[0], want[1], out)
		}
	}
	out, err = exec.Command(goBin, "tool", "pprof", "-top", "-unit=B", "-diff_base="+path, path).CombinedOutput()
	if err != nil {
		t.Fatalf("go tool pprof -diff_base: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "0B total") && !strings.Contains(string(out), "of 0B total") {
		t.Errorf("diff against itself is not empty:\n%s", out)
	}
}

// hasTopRow reports whether a pprof -top row has flat value flat and ends with fn.
func hasTopRow(out, flat, fn string) bool {
	for _, line := range strings.Split(out, "\n") {
		fields := strings.Fields(line)
		if len(fields) >= 6 && fields[0] == flat && fields[len(fields)-1] == fn {
			return true
		}
	}
	return false
}
