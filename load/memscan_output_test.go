package load

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/memscan/memscan/internal/input"
)

// TestDecodeMemscanOutput: memscan's own files fed back as inputs get one error that says so (the CLI adds the command to use),
// not a parse error about their keys; PyTorch inputs that merely mention memscan still decode.
func TestDecodeMemscanOutput(t *testing.T) {
	msgpackSummary := append([]byte{0xde, 0x00, 0x10, 0xa4}, "kind"...)
	msgpackSummary = append(msgpackSummary, 0xb4)
	msgpackSummary = append(msgpackSummary, "memscan-rank-summary"...)
	reportMsgpack := append([]byte{0x84, 0xa7}, "version"...)
	reportMsgpack = append(reportMsgpack, 0x01, 0xa4)
	reportMsgpack = append(reportMsgpack, "tool"...)
	reportMsgpack = append(reportMsgpack, 0xad)
	reportMsgpack = append(reportMsgpack, "memscan 0.1.0"...)
	tests := []struct {
		name    string
		data    []byte
		refused bool
	}{
		{"summary.json", []byte("{\n  \"version\": 1,\n  \"tool\": \"memscan 0.1.0\",\n  \"inputs\": []\n}\n"), true},
		{"cross_rank.json", []byte(`{"kind": "memscan-cross-rank", "version": 1, "ranks": 0}`), true},
		{"rank.summary.msgpack", msgpackSummary, true},
		{"report.msgpack", reportMsgpack, true},
		{"tracer_rank0.json", []byte(`{"cuda:0": {"peak_memory_mb": 1.0, "tensors": [{"size_bytes": 1048576, "size_mb": 1.0, "shape": "[1]", "module": "memscan", "phase": "fwd", "create_stack_trace": [], "release_stack_trace": []}]}}`), false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Decode(context.Background(), tc.name, bytes.NewReader(tc.data))
			var e *input.Error
			refused := err != nil && errors.As(err, &e) && errors.Is(err, input.ErrMemscanOutput)
			if refused != tc.refused {
				t.Errorf("error %v; want refused as a memscan output: %v", err, tc.refused)
			}
			if !tc.refused && err != nil {
				t.Errorf("a PyTorch input failed: %v", err)
			}
			if refused && (!errors.Is(err, input.ErrUnknownContent) || !strings.HasPrefix(err.Error(), tc.name+": ")) {
				t.Errorf("error %q: want ErrUnknownContent naming the file", err)
			}
		})
	}
}
