package snapshot

import (
	"context"
	"io"
)

// decodeTextInput decodes a training log: lines are streamed with a bounded buffer, and only memory lines are
// kept. A log without any memory line is not recognised.
func decodeTextInput(ctx context.Context, name string, r io.Reader) (*Input, error) {
	lg, err := DecodeLog(ctx, name, r)
	if err != nil {
		return nil, err
	}
	format := map[string]string{"megatron": FormatMegatronLog, "deepspeed": FormatDeepSpeedLog, "torchtitan": FormatTorchtitanLog}[lg.Dialect]
	return &Input{Path: name, Format: format, Log: lg}, nil
}
