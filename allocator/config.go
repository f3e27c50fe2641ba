package allocator

import (
	"fmt"
	"math"
	"math/bits"
	"strconv"
	"strings"

	"github.com/memscan/memscan/internal/suggest"
)

// Byte sizes of the allocator's constants (see the package documentation for their roles).
const (
	MiB = 1 << 20

	minBlockSize  = 512      // kMinBlockSize: rounding unit and small-pool split threshold
	smallSize     = 1 * MiB  // kSmallSize: largest small-pool request, large-pool split threshold
	smallBuffer   = 2 * MiB  // kSmallBuffer: small-pool segment and expandable page
	largeBuffer   = 20 * MiB // kLargeBuffer: default segment for 1–10 MiB requests and large expandable page
	minLargeAlloc = 10 * MiB // kMinLargeAlloc
	roundLarge    = 2 * MiB  // kRoundLarge

	// roundupIntervals is the number of roundup_power2_divisions intervals: [2^(20+k), 2^(21+k)), k = 0..15.
	roundupIntervals = 16
)

// Config is one PYTORCH_CUDA_ALLOC_CONF setting of the native caching allocator. The zero value is PyTorch's
// default configuration.
type Config struct {
	// ExpandableSegments is expandable_segments:True.
	ExpandableSegments bool
	// MaxSplitSize is max_split_size_mb in bytes; 0 means unlimited (the default).
	MaxSplitSize int64
	// MaxNonSplitRounding is max_non_split_rounding_mb in bytes; 0 means the default (the large segment size).
	MaxNonSplitRounding int64
	// RoundupPower2Divisions holds the divisions per interval; interval k covers [2^(20+k), 2^(21+k)) bytes,
	// with everything under 1 MiB in interval 0 and everything from 32 GiB on in interval 15. 0 or 1: plain
	// 512-byte rounding.
	RoundupPower2Divisions [roundupIntervals]int64
	// GarbageCollectionThreshold is garbage_collection_threshold (0 < t < 1); 0 when unset. It only acts
	// together with a memory fraction.
	GarbageCollectionThreshold float64
	// PerProcessMemoryFraction is per_process_memory_fraction (or torch.cuda.set_per_process_memory_fraction);
	// 0 when unset. A value of 1 sets no limit.
	PerProcessMemoryFraction float64
	// LargeSegmentSize is large_segment_size_mb in bytes (newest torch); 0 means 20 MiB.
	LargeSegmentSize int64
	// Backend is "native" (the default, "" too) or "cudaMallocAsync" (not modelled).
	Backend string
	// Inert are accepted settings that do not change device memory (pinned host memory, locking), as given.
	Inert []string
}

// SettingError is a PYTORCH_CUDA_ALLOC_CONF setting that is unknown or malformed.
type SettingError struct {
	Setting string // the setting's key, or the offending token when there is no key
	Value   string
	Msg     string
}

func (e *SettingError) Error() string {
	if e.Value != "" {
		return fmt.Sprintf("allocator setting %q: value %q: %s", e.Setting, e.Value, e.Msg)
	}
	return fmt.Sprintf("allocator setting %q: %s", e.Setting, e.Msg)
}

// maxConfLen bounds what ParseConf reads; real settings are a few dozen bytes.
const maxConfLen = 4096

// ParseConf parses a PYTORCH_CUDA_ALLOC_CONF string: comma-separated key:value settings, where
// roundup_power2_divisions also takes a bracketed list ([64:8,256:4,>:1]). Spaces are ignored, as PyTorch's
// tokenizer does. An unknown or malformed setting is a *SettingError naming it.
func ParseConf(s string) (Config, error) {
	var c Config
	if len(s) > maxConfLen {
		return c, &SettingError{Setting: s[:32] + "…", Msg: fmt.Sprintf("longer than %d bytes", maxConfLen)}
	}
	toks := tokenize(s)
	for i := 0; i < len(toks); i++ {
		key := toks[i]
		if key == "," {
			continue // PyTorch tolerates empty settings (a trailing comma)
		}
		if isPunct(key) {
			return c, &SettingError{Setting: key, Msg: "expected a setting name"}
		}
		if i+1 >= len(toks) || toks[i+1] != ":" {
			return c, &SettingError{Setting: key, Msg: "expected key:value"}
		}
		i += 2
		if i >= len(toks) || (isPunct(toks[i]) && toks[i] != "[") {
			return c, &SettingError{Setting: key, Msg: "missing value"}
		}
		var err error
		if key == "roundup_power2_divisions" {
			i, err = c.parseRoundup(toks, i)
		} else {
			err = c.set(key, toks[i])
		}
		if err != nil {
			return c, err
		}
		if i+1 < len(toks) && toks[i+1] != "," {
			return c, &SettingError{Setting: key, Value: toks[i+1], Msg: "expected ',' after the value"}
		}
		i++ // the comma
	}
	return c, nil
}

// tokenize splits like PyTorch's ConfigTokenizer: ',', ':', '[' and ']' are tokens of their own, spaces vanish.
func tokenize(s string) []string {
	var toks []string
	var cur strings.Builder
	flush := func() {
		if cur.Len() > 0 {
			toks = append(toks, cur.String())
			cur.Reset()
		}
	}
	for _, r := range s {
		switch r {
		case ',', ':', '[', ']':
			flush()
			toks = append(toks, string(r))
		case ' ', '\t', '\n', '\r':
		default:
			cur.WriteRune(r)
		}
	}
	flush()
	return toks
}

func isPunct(t string) bool { return t == "," || t == ":" || t == "[" || t == "]" }

// SettingNames lists every setting ParseConf accepts, those that change device memory first.
func SettingNames() []string {
	return []string{"expandable_segments", "max_split_size_mb", "roundup_power2_divisions", "garbage_collection_threshold",
		"per_process_memory_fraction", "max_non_split_rounding_mb", "large_segment_size_mb", "backend",
		"release_lock_on_cudamalloc", "pinned_use_cuda_host_register", "pinned_use_background_threads",
		"graph_capture_record_stream_reuse", "pinned_use_hip_host_register", "release_lock_on_hipmalloc",
		"pinned_num_register_threads", "pinned_reserve_segment_size_mb", "pinned_max_register_threads"}
}

func (c *Config) set(key, val string) error {
	bad := func(msg string) error { return &SettingError{Setting: key, Value: val, Msg: msg} }
	switch key {
	case "max_split_size_mb", "max_non_split_rounding_mb", "large_segment_size_mb":
		mb, err := strconv.ParseInt(val, 10, 64)
		if err != nil || mb < 0 {
			return bad("want a whole number of MiB")
		}
		if mb < 20 {
			return bad("must be at least 20 (MiB)")
		}
		if mb > math.MaxInt64/MiB {
			return bad("too large")
		}
		switch key {
		case "max_split_size_mb":
			c.MaxSplitSize = mb * MiB
		case "max_non_split_rounding_mb":
			c.MaxNonSplitRounding = mb * MiB
		default:
			c.LargeSegmentSize = mb * MiB
		}
	case "garbage_collection_threshold":
		f, err := strconv.ParseFloat(val, 64)
		if err != nil || math.IsNaN(f) || f <= 0 || f >= 1 {
			return bad("want a number strictly between 0 and 1")
		}
		c.GarbageCollectionThreshold = f
	case "per_process_memory_fraction":
		f, err := strconv.ParseFloat(val, 64)
		if err != nil || math.IsNaN(f) || f < 0 || f > 1 {
			return bad("want a number from 0 to 1")
		}
		c.PerProcessMemoryFraction = f
	case "expandable_segments":
		b, err := parseBool(val)
		if err != nil {
			return bad(err.Error())
		}
		c.ExpandableSegments = b
	case "backend":
		if val != "native" && val != "cudaMallocAsync" {
			return bad("want native or cudaMallocAsync")
		}
		c.Backend = val
	case "release_lock_on_cudamalloc", "pinned_use_cuda_host_register", "pinned_use_background_threads",
		"graph_capture_record_stream_reuse", "pinned_use_hip_host_register", "release_lock_on_hipmalloc":
		if _, err := parseBool(val); err != nil {
			return bad(err.Error())
		}
		c.Inert = append(c.Inert, key+":"+val)
	case "pinned_num_register_threads", "pinned_reserve_segment_size_mb", "pinned_max_register_threads":
		n, err := strconv.ParseInt(val, 10, 64)
		if err != nil || n <= 0 {
			return bad("want a positive whole number")
		}
		c.Inert = append(c.Inert, key+":"+val)
	default:
		return &SettingError{Setting: key, Msg: "unknown setting" + suggest.Hint(key, SettingNames(), suggest.Quoted)}
	}
	return nil
}

// parseBool accepts exactly what PyTorch accepts: True or False.
func parseBool(v string) (bool, error) {
	switch v {
	case "True":
		return true, nil
	case "False":
		return false, nil
	}
	return false, fmt.Errorf("want True or False")
}

// parseRoundup parses the value of roundup_power2_divisions starting at toks[i] and returns the index of its
// last token. A single number sets every interval; a list uses MiB keys that are powers of two: the first key
// also fills the intervals below it, '>' fills every interval after the last key, unnamed intervals stay 0.
func (c *Config) parseRoundup(toks []string, i int) (int, error) {
	const key = "roundup_power2_divisions"
	bad := func(val, msg string) error { return &SettingError{Setting: key, Value: val, Msg: msg} }
	divisions := func(v string) (int64, error) {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 0 || (n != 0 && n&(n-1) != 0) {
			return 0, bad(v, "divisions must be 0 or a power of two")
		}
		return n, nil
	}
	var d [roundupIntervals]int64
	if toks[i] != "[" {
		n, err := divisions(toks[i])
		if err != nil {
			return i, err
		}
		for k := range d {
			d[k] = n
		}
		c.RoundupPower2Divisions = d
		return i, nil
	}
	first, last := true, 0
	for i++; ; i++ {
		if i >= len(toks) {
			return i, bad("", "missing ']'")
		}
		if toks[i] == "]" {
			break
		}
		k := toks[i]
		if i+2 >= len(toks) || toks[i+1] != ":" || isPunct(toks[i+2]) {
			return i, bad(k, "want INTERVAL_MB:DIVISIONS inside [...]")
		}
		n, err := divisions(toks[i+2])
		if err != nil {
			return i, err
		}
		i += 2
		if k == ">" {
			for j := last + 1; j < roundupIntervals; j++ {
				d[j] = n
			}
		} else {
			mb, err := strconv.ParseUint(k, 10, 64)
			if err != nil || mb == 0 || mb&(mb-1) != 0 {
				return i, bad(k, "interval keys must be powers of two (MiB)")
			}
			idx := min(bits.Len64(mb)-1, roundupIntervals-1)
			if first {
				for j := 0; j < idx; j++ {
					d[j] = n
				}
				first = false
			}
			d[idx] = n
			last = idx
		}
		if i+1 < len(toks) && toks[i+1] == "," {
			i++
		}
	}
	c.RoundupPower2Divisions = d
	return i, nil
}

// Validate reports a configuration the model cannot replay.
func (c Config) Validate() error {
	if c.Backend == "cudaMallocAsync" {
		return &SettingError{Setting: "backend", Value: c.Backend, Msg: "cudaMallocAsync does not cache blocks; only the native allocator is modelled"}
	}
	return nil
}

// largeSegment is the segment for 1–10 MiB requests and the large expandable page.
func (c Config) largeSegment() int64 { return cmpOr(c.LargeSegmentSize, largeBuffer) }

// nonSplitRounding is the oversize reuse window.
func (c Config) nonSplitRounding() int64 { return cmpOr(c.MaxNonSplitRounding, c.largeSegment()) }

// maxSplit returns max_split_size, math.MaxInt64 when unlimited.
func (c Config) maxSplit() int64 {
	if c.MaxSplitSize <= 0 {
		return math.MaxInt64
	}
	return c.MaxSplitSize
}

func cmpOr(v, def int64) int64 {
	if v > 0 {
		return v
	}
	return def
}

// String renders the settings that differ from the default in PYTORCH_CUDA_ALLOC_CONF syntax, in a fixed order;
// "" for the default configuration.
func (c Config) String() string {
	var parts []string
	if c.Backend != "" && c.Backend != "native" {
		parts = append(parts, "backend:"+c.Backend)
	}
	if c.ExpandableSegments {
		parts = append(parts, "expandable_segments:True")
	}
	if c.MaxSplitSize > 0 {
		parts = append(parts, fmt.Sprintf("max_split_size_mb:%d", c.MaxSplitSize/MiB))
	}
	if c.MaxNonSplitRounding > 0 {
		parts = append(parts, fmt.Sprintf("max_non_split_rounding_mb:%d", c.MaxNonSplitRounding/MiB))
	}
	if c.LargeSegmentSize > 0 {
		parts = append(parts, fmt.Sprintf("large_segment_size_mb:%d", c.LargeSegmentSize/MiB))
	}
	if r := c.roundupString(); r != "" {
		parts = append(parts, "roundup_power2_divisions:"+r)
	}
	if c.GarbageCollectionThreshold > 0 {
		parts = append(parts, "garbage_collection_threshold:"+strconv.FormatFloat(c.GarbageCollectionThreshold, 'g', -1, 64))
	}
	if c.PerProcessMemoryFraction > 0 {
		parts = append(parts, "per_process_memory_fraction:"+strconv.FormatFloat(c.PerProcessMemoryFraction, 'g', -1, 64))
	}
	parts = append(parts, c.Inert...)
	return strings.Join(parts, ",")
}

// roundupString renders the divisions as PyTorch's list form (or one number when all intervals agree); "" when
// all are 0.
func (c Config) roundupString() string {
	d := c.RoundupPower2Divisions
	if d == [roundupIntervals]int64{} {
		return ""
	}
	same := true
	for _, v := range d {
		same = same && v == d[0]
	}
	if same {
		return strconv.FormatInt(d[0], 10)
	}
	// Name interval 0 first (a first key fills the intervals below it) and then every non-zero interval, since
	// intervals a list leaves unnamed stay 0.
	var items []string
	for k, v := range d {
		if k == 0 || v != 0 {
			items = append(items, fmt.Sprintf("%d:%d", 1<<k, v))
		}
	}
	return "[" + strings.Join(items, ",") + "]"
}
