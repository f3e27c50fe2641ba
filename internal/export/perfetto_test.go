package export

import (
	"bytes"
	"context"
	"encoding/json"
	"github.com/memscan/memscan/snapshot"
	"testing"
)

// validateTraceEvents checks the fields the trace-event format requires of the phases memscan writes: every event
// has a name, a known ph, integer pid/tid; M events name a process or thread; C events carry numeric args; i events
// have a scope in g/p/t; counter timestamps never go back per track.
func validateTraceEvents(t *testing.T, raw []byte) []map[string]any {
	t.Helper()
	var doc map[string]any
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatalf("trace is not JSON: %v", err)
	}
	evs, ok := doc["traceEvents"].([]any)
	if !ok {
		t.Fatalf("traceEvents missing or not an array")
	}
	if u, ok := doc["displayTimeUnit"]; ok && u != "ms" && u != "ns" {
		t.Errorf("displayTimeUnit %v", u)
	}
	lastTS := map[string]float64{}
	var out []map[string]any
	for i, x := range evs {
		e, ok := x.(map[string]any)
		if !ok {
			t.Fatalf("event %d is not an object", i)
		}
		out = append(out, e)
		name, _ := e["name"].(string)
		ph, _ := e["ph"].(string)
		if name == "" {
			t.Errorf("event %d has no name", i)
		}
		for _, k := range []string{"pid", "tid"} {
			v, ok := e[k].(float64)
			if !ok || v != float64(int64(v)) {
				t.Errorf("event %d: %s = %v, want an integer", i, k, e[k])
			}
		}
		ts, hasTS := e["ts"].(float64)
		switch ph {
		case "M":
			if name != "process_name" && name != "thread_name" {
				t.Errorf("event %d: metadata %q", i, name)
			}
			if args, _ := e["args"].(map[string]any); args == nil || args["name"] == nil {
				t.Errorf("event %d: metadata without args.name", i)
			}
		case "C":
			args, _ := e["args"].(map[string]any)
			if !hasTS || len(args) == 0 {
				t.Errorf("event %d: counter without ts or args", i)
			}
			for k, v := range args {
				if _, ok := v.(float64); !ok {
					t.Errorf("event %d: counter arg %s = %v is not a number", i, k, v)
				}
			}
			track := name + "/" + string(rune(int(e["pid"].(float64))))
			if prev, ok := lastTS[track]; ok && ts < prev {
				t.Errorf("event %d: counter %q goes back in time (%v < %v)", i, name, ts, prev)
			}
			lastTS[track] = ts
		case "i", "I":
			if !hasTS {
				t.Errorf("event %d: instant without ts", i)
			}
			if s, ok := e["s"].(string); ok && s != "g" && s != "p" && s != "t" {
				t.Errorf("event %d: instant scope %q", i, s)
			}
		default:
			t.Errorf("event %d: unexpected phase %q", i, ph)
		}
	}
	return out
}

func TestPerfettoFixture(t *testing.T) {
	var buf bytes.Buffer
	if err := WritePerfetto(context.Background(), &buf, fixtureSnapshot(), TraceOptions{Rank: 3, Classify: fixtureClassifier}); err != nil {
		t.Fatal(err)
	}
	evs := validateTraceEvents(t, buf.Bytes())
	var maxAlloc, lastAlloc, firstAlloc, lastReserved, firstReserved float64 = 0, -1, -1, -1, -1
	var ooms, annotations int
	for _, e := range evs {
		if e["pid"].(float64) != 3 {
			t.Errorf("pid %v, want the rank 3", e["pid"])
		}
		args, _ := e["args"].(map[string]any)
		switch e["name"] {
		case "GPU0 memory":
			a, r := args["allocated"].(float64), args["reserved"].(float64)
			if firstAlloc < 0 {
				firstAlloc, firstReserved = a, r
			}
			lastAlloc, lastReserved = a, r
			maxAlloc = max(maxAlloc, a)
		case "GPU0 by category":
			// Per-category series must add up to the allocated counter at the same timestamp.
			var sum float64
			for _, v := range args {
				sum += v.(float64)
			}
			if want := allocatedAt(evs, e["ts"].(float64)); sum != want {
				t.Errorf("categories at %v sum to %v, allocated is %v", e["ts"], sum, want)
			}
		case "OOM":
			ooms++
			if args["requested_bytes"].(float64) != 1<<30 || args["device_free_bytes"].(float64) != 123 {
				t.Errorf("OOM args %v", args)
			}
		case "ProfilerStep#1":
			annotations++
		}
	}
	// By hand: 1000 (b1) + 777 (freed in the trace, allocated before it) live at the start over 2 MiB reserved;
	// the peak adds b3 (10,000,000) and b4 (10 MiB); at the end b1 and b3 are left over 22 MiB reserved.
	if firstAlloc != 1777 || firstReserved != 2*mib {
		t.Errorf("initial allocated/reserved %v/%v, want 1777/%d", firstAlloc, firstReserved, 2*mib)
	}
	if maxAlloc != 1777+10000000+10*mib {
		t.Errorf("peak allocated %v", maxAlloc)
	}
	if lastAlloc != 10001000 || lastReserved != 22*mib {
		t.Errorf("final allocated/reserved %v/%v", lastAlloc, lastReserved)
	}
	if ooms != 1 || annotations != 1 {
		t.Errorf("%d OOM and %d annotation events, want 1 and 1", ooms, annotations)
	}
}

func allocatedAt(evs []map[string]any, ts float64) float64 {
	v := -1.0
	for _, e := range evs {
		if e["name"] == "GPU0 memory" && e["ts"].(float64) == ts {
			v = e["args"].(map[string]any)["allocated"].(float64)
		}
	}
	return v
}

// TestPerfettoAnnotateText: an annotate event (torch 2.10's user annotations) is an instant marker carrying its
// user_metadata as text.
func TestPerfettoAnnotateText(t *testing.T) {
	s := fixtureSnapshot()
	tr := s.DeviceTraces[0]
	last := tr[len(tr)-1]
	s.DeviceTraces[0] = append(tr, snapshot.TraceEntry{Action: snapshot.ActionAnnotate, TimeUS: last.TimeUS + 10, HasTime: true,
		Extra: snapshot.NewTraceTables(s).Extra(snapshot.TraceExtra{UserMetadata: `{"layer": 3}`})})
	var buf bytes.Buffer
	if err := WritePerfetto(context.Background(), &buf, s, TraceOptions{Classify: fixtureClassifier}); err != nil {
		t.Fatal(err)
	}
	var texts []any
	for _, e := range validateTraceEvents(t, buf.Bytes()) {
		if e["name"] == "annotate" {
			texts = append(texts, e["args"].(map[string]any)["text"])
		}
	}
	if len(texts) != 1 || texts[0] != `{"layer": 3}` {
		t.Errorf("annotate events carry %v, want one with the user metadata", texts)
	}
}
