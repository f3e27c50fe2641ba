package results

import (
	"bytes"
	"testing"

	"github.com/memscan/memscan/report"
)

// FuzzDecodeMsgpack feeds arbitrary bytes to the report.msgpack reader: it must return an error or a run, never
// panic or allocate without bound.
func FuzzDecodeMsgpack(f *testing.F) {
	for _, run := range []*report.Run{sampleRun(), singleRun(), viewsRun()} {
		var b bytes.Buffer
		if err := WriteMsgpack(&b, run); err != nil {
			f.Fatal(err)
		}
		f.Add(b.Bytes())
	}
	f.Add([]byte{})
	f.Add([]byte{0xdd, 0xff, 0xff, 0xff, 0xff}) // array32 claiming 4 billion elements
	f.Fuzz(func(t *testing.T, data []byte) {
		run, err := DecodeMsgpack("fuzz", data)
		if err == nil && run == nil {
			t.Fatal("nil run without an error")
		}
	})
}
