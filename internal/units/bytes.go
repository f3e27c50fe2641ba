package units

import (
	"fmt"
	"strconv"
)

// Bytes renders a byte count with 1024-based units and one decimal: "512 B", "1.5 KiB", "761.6 MiB", "-2.0 GiB".
// It is memscan's byte formatter; PyTorchBytes only echoes sizes that PyTorch's own messages print.
func Bytes(n int64) string {
	u := uint64(n)
	sign := ""
	if n < 0 {
		u = uint64(-n) // also right for math.MinInt64: two's complement gives 1<<63
		sign = "-"
	}
	if u < 1024 {
		return sign + strconv.FormatUint(u, 10) + " B"
	}
	names := [...]string{"KiB", "MiB", "GiB", "TiB", "PiB", "EiB"}
	v := float64(u) / 1024
	i := 0
	// Move to the next unit before rounding would print "1024.0", so compare against the rounded value.
	for i < len(names)-1 && v >= 1023.95 {
		v /= 1024
		i++
	}
	return fmt.Sprintf("%s%.1f %s", sign, v, names[i])
}

// GiB converts bytes to GiB for tables whose column header names the unit.
func GiB(n int64) float64 { return float64(n) / (1 << 30) }

// SignedBytes renders a change in bytes: "+1.5 GiB", "-512 B", "0 B". Deltas and errors use it so that a
// growth is never mistaken for a size.
func SignedBytes(n int64) string {
	if n > 0 {
		return "+" + Bytes(n)
	}
	return Bytes(n)
}

// PyTorchBytes writes n as PyTorch's out-of-memory message does (c10's format_size: bytes up to 1 KiB, then KiB,
// MiB or GiB with two decimals), so that a failed request reads the same in memscan's report as in the log.
func PyTorchBytes(n int64) string {
	switch {
	case n <= 1<<10:
		return fmt.Sprintf("%d bytes", n)
	case n <= 1<<20:
		return fmt.Sprintf("%.2f KiB", float64(n)/(1<<10))
	case n <= 1<<30:
		return fmt.Sprintf("%.2f MiB", float64(n)/(1<<20))
	}
	return fmt.Sprintf("%.2f GiB", float64(n)/(1<<30))
}
