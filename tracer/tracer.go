package tracer

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"reflect"
	"regexp"
	"strconv"
	"strings"

	"github.com/memscan/memscan/internal/input"
	"github.com/memscan/memscan/snapshot"
)

// File is one peak-memory JSON written by the PyTorch memory tracer (MemoryDispatchMode
// save_peak_memory_snapshot_to_file): for each device, the peak of tracked storage bytes and the storages that
// were alive at that peak. One file describes one (simulated) rank.
type File struct {
	// Devices in file order ("cuda:0", "cpu", ...). Each device has its own peak instant.
	Devices []Device
	// Rank is taken from the file path (rank3, rank_3, _r3_) or set by the caller; -1 when unknown. The file
	// itself never records it.
	Rank int
}

// Device is one top-level device entry.
type Device struct {
	Name string // str(torch.device), e.g. "cuda:0", "cpu"
	// PeakMB is peak_memory_mb as written (MiB although labelled MB); PeakBytes is it in bytes, rounded.
	PeakMB    float64
	PeakBytes int64
	// Tensors are the storages alive at the peak, in file order (size descending in real files).
	Tensors []Tensor
}

// Ordinal returns the device index of "cuda:N" (or any "<type>:N"), or -1 when the name has none.
func (d *Device) Ordinal() int {
	i := strings.LastIndexByte(d.Name, ':')
	if i < 0 {
		return -1
	}
	n, err := strconv.Atoi(d.Name[i+1:])
	if err != nil || n < 0 {
		return -1
	}
	return n
}

// IsCUDA reports whether the device is a CUDA device.
func (d *Device) IsCUDA() bool { return strings.HasPrefix(d.Name, "cuda") }

// ListedBytes is the sum of size_bytes over the listed tensors.
func (d *Device) ListedBytes() int64 {
	var n int64
	for i := range d.Tensors {
		n += d.Tensors[i].SizeBytes
	}
	return n
}

// Tensor is one storage record.
type Tensor struct {
	SizeBytes int64   // untyped_storage().nbytes()
	SizeMB    float64 // as written; SizeBytes is authoritative
	// Shape is the display string as written ("torch.Size([4096, 1, 2048])"); Dims its parsed form, nil when
	// it could not be parsed, empty for a scalar.
	Shape string
	Dims  []int64
	// Module is the module path active when the storage was first seen, "Unknown" outside any forward.
	Module string
	Phase  string
	// Create and Release are the creation and release stacks, innermost frame first like every Stack in this
	// package (the file lists them outermost first). Identical stacks within a file share one pointer. Release
	// is nil when the storage was still alive when the file was written.
	Create  *Stack
	Release *Stack
}

// Numel is the element count of the parsed shape, or -1 when the shape is unknown or overflows.
func (t *Tensor) Numel() int64 {
	if t.Dims == nil {
		return -1
	}
	n := int64(1)
	for _, d := range t.Dims {
		if d < 0 || (d > 0 && n > math.MaxInt64/d) {
			return -1
		}
		n *= d
	}
	return n
}

// ElementBytes infers the element size from size_bytes / numel when it divides exactly into 1, 2, 4 or 8 (the
// file records no dtype); 0 when it cannot be inferred (views, flat buffers of another shape, unknown shape).
func (t *Tensor) ElementBytes() int {
	n := t.Numel()
	if n <= 0 || t.SizeBytes%n != 0 {
		return 0
	}
	switch e := t.SizeBytes / n; e {
	case 1, 2, 4, 8:
		return int(e)
	}
	return 0
}

// Stack is a tracer stack trace: frames innermost first plus the source line the traceback printed for
// each frame ("" when Python could not read the source).
type Stack struct {
	snapshot.Stack
	Code []string
}

// FirstUserFrame returns the index in s.Frames of the innermost frame that is not the tracer's own machinery
// (__torch_dispatch__, torch/utils/_pytree.py, the tracker lambda, weakref finalizers, the memory_profiler
// package); len(s.Frames) when every frame is the tracer's.
func (s *Stack) FirstUserFrame() int {
	if s == nil {
		return 0
	}
	i := 0
	for i < len(s.Frames) && IsOwnFrame(s.Frames[i]) {
		i++
	}
	return i
}

// IsOwnFrame reports whether f is one of the memory tracer's own frames, which every creation stack ends
// with (7 frames) and every release stack ends with (2 frames).
func IsOwnFrame(f snapshot.Frame) bool {
	fn := strings.ReplaceAll(f.Filename, "\\", "/")
	switch {
	case f.Name == "__torch_dispatch__":
		return true
	case strings.Contains(fn, "memory_profiler/"), strings.HasSuffix(fn, "memory_dispatch_mode.py"):
		return true
	case strings.HasSuffix(fn, "torch/utils/_pytree.py"):
		return true
	case strings.HasSuffix(fn, "/weakref.py") && f.Name == "__call__":
		return true
	}
	return false
}

// ParseShape parses the tracer's shape string: "torch.Size([4096, 1, 2048])", "torch.Size([])", and the bare
// forms "[4, 2]" / "(4, 2)". ok is false for anything else.
func ParseShape(s string) (dims []int64, ok bool) {
	s = strings.TrimSpace(s)
	if rest, found := strings.CutPrefix(s, "torch.Size("); found {
		inner, closed := strings.CutSuffix(rest, ")")
		if !closed {
			return nil, false
		}
		s = strings.TrimSpace(inner)
	}
	if len(s) < 2 {
		return nil, false
	}
	switch {
	case s[0] == '[' && s[len(s)-1] == ']', s[0] == '(' && s[len(s)-1] == ')':
		s = s[1 : len(s)-1]
	default:
		return nil, false
	}
	dims = []int64{}
	for part := range strings.SplitSeq(s, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue // "(4,)" and "[]"
		}
		d, err := strconv.ParseInt(part, 10, 64)
		if err != nil || d < 0 {
			return nil, false
		}
		dims = append(dims, d)
	}
	return dims, true
}

// parseTracerFrame parses one traceback.format_stack() entry:
//
//	File "<path>", line <n>, in <func>\n    <source line>\n
//
// The source line is absent when Python could not read the file. Text that does not have this form is kept
// whole as the function name, so no information is lost.
func parseTracerFrame(s string) (snapshot.Frame, string) {
	head, code, _ := strings.Cut(s, "\n")
	code = strings.TrimSpace(code)
	h := strings.TrimSpace(head)
	rest, ok := strings.CutPrefix(h, `File "`)
	if !ok {
		return snapshot.Frame{Name: strings.TrimSpace(s)}, ""
	}
	i := strings.LastIndex(rest, `", line `)
	if i < 0 {
		return snapshot.Frame{Name: strings.TrimSpace(s)}, ""
	}
	file := rest[:i]
	rest = rest[i+len(`", line `):]
	num, fn, ok := strings.Cut(rest, ", in ")
	if !ok {
		return snapshot.Frame{Name: strings.TrimSpace(s)}, ""
	}
	line, err := strconv.Atoi(strings.TrimSpace(num))
	if err != nil || line < 0 {
		return snapshot.Frame{Name: strings.TrimSpace(s)}, ""
	}
	return snapshot.Frame{Filename: file, Line: line, Name: strings.TrimSpace(fn)}, code
}

// Limits that keep a hostile or corrupt tracer file from exhausting memory.
const (
	maxTracerDevices      = 1 << 10
	maxTracerTensors      = 1 << 22
	maxTracerStackFrames  = 1 << 14
	maxTracerDistinctText = 1 << 22 // distinct frame strings kept per file
)

// tracerDecoder walks a tracer file with the token API so that the file is read once and only the decoded
// records (with interned frames and stacks) are kept.
type tracerDecoder struct {
	s      *input.JSONStream
	frames map[string]frameText
	stacks map[string]*Stack
	key    strings.Builder
}

type frameText struct {
	f    snapshot.Frame
	code string
}

// DecodeRest decodes a tracer file whose opening '{' and first key have already been read.
func DecodeRest(s *input.JSONStream, firstKey string) (*File, error) {
	d := &tracerDecoder{s: s, frames: map[string]frameText{}, stacks: map[string]*Stack{}}
	tr := &File{Rank: -1}
	seen := map[string]bool{}
	key := firstKey
	for {
		if seen[key] {
			return nil, s.Errf(key, "device key appears twice")
		}
		seen[key] = true
		if len(tr.Devices) >= maxTracerDevices {
			return nil, s.Errf(key, "more than %d devices", maxTracerDevices)
		}
		// A first key that names no device may start JSON of another kind altogether.
		dev, err := d.device(key, len(tr.Devices) == 0 && !deviceName.MatchString(key))
		if err != nil {
			return nil, err
		}
		tr.Devices = append(tr.Devices, dev)
		more, err := s.NextKey("")
		if err != nil {
			return nil, err
		}
		if more == nil {
			break
		}
		key = *more
	}
	if err := s.End(); err != nil {
		return nil, err
	}
	return tr, nil
}

// NotTracerError is JSON whose top-level object is not a memory-tracer file: its first key names no device and
// holds something other than a device's peak_memory_mb and tensors. It unwraps to input.ErrUnknownContent.
type NotTracerError struct {
	// Key is the first key; Holds describes its value ("string \"x\"", "an object without ...").
	Key, Holds string
}

func (e *NotTracerError) Error() string {
	return fmt.Sprintf("its first key %q holds %s, where a memory-tracer file holds a device's {\"peak_memory_mb\", \"tensors\"}", e.Key, e.Holds)
}

func (e *NotTracerError) Unwrap() error { return input.ErrUnknownContent }

// deviceName matches what str(torch.device) gives for the device types a tracer file may hold.
var deviceName = regexp.MustCompile(`^(?:cuda|cpu|mps|xpu|hpu|npu|mtia|meta|xla|ipu|lazy|maia|privateuseone)(?::\d+)?$`)

// device decodes the entry of the device name. notTracer says the entry may show the file to be no tracer file
// at all (the first entry, under a key that names no device): then a value other than a device's is a
// *NotTracerError instead of an error inside a tracer file.
func (d *tracerDecoder) device(name string, notTracer bool) (Device, error) {
	s := d.s
	dev := Device{Name: name}
	tok, err := s.Token(name)
	if err != nil {
		return dev, err
	}
	if tok != json.Delim('{') {
		if notTracer {
			return dev, &NotTracerError{Key: name, Holds: input.DescribeToken(tok)}
		}
		return dev, s.TypeErr(name, "an object", tok)
	}
	var havePeak, haveTensors bool
	for {
		k, err := s.NextKey(name)
		if err != nil {
			return dev, err
		}
		if k == nil {
			break
		}
		path := name + "." + *k
		switch *k {
		case "peak_memory_mb":
			f, err := s.Float(path)
			if err != nil {
				return dev, err
			}
			if f < 0 {
				return dev, s.Errf(path, "negative (%v)", f)
			}
			if f > float64(math.MaxInt64)/(1<<20) {
				return dev, s.Errf(path, "out of range (%v)", f)
			}
			dev.PeakMB, dev.PeakBytes, havePeak = f, int64(math.Round(f*(1<<20))), true
		case "tensors":
			if err := d.tensors(path, &dev); err != nil {
				return dev, err
			}
			haveTensors = true
		default:
			if err := s.Skip(path); err != nil {
				return dev, err
			}
		}
	}
	switch {
	case notTracer && !havePeak && !haveTensors:
		return dev, &NotTracerError{Key: name, Holds: "an object without peak_memory_mb or tensors"}
	case !havePeak:
		return dev, s.Errf(name, "missing peak_memory_mb")
	case !haveTensors:
		return dev, s.Errf(name, "missing tensors")
	}
	return dev, nil
}

func (d *tracerDecoder) tensors(path string, dev *Device) error {
	s := d.s
	if err := s.ExpectDelim(path, '['); err != nil {
		return err
	}
	for i := 0; ; i++ {
		more, err := s.More(path)
		if err != nil {
			return err
		}
		if !more {
			break
		}
		if i >= maxTracerTensors {
			return s.Errf(path, "more than %d tensors", maxTracerTensors)
		}
		t, err := d.tensor(fmt.Sprintf("%s[%d]", path, i))
		if err != nil {
			return err
		}
		dev.Tensors = append(dev.Tensors, t)
	}
	return s.ExpectDelim(path, ']')
}

// rawTensor is one tensor record as encoding/json decodes it in a single call (far cheaper than a token per
// frame string); numbers stay raw so that their type, sign and range are checked here with the JSON path.
type rawTensor struct {
	SizeBytes json.RawMessage `json:"size_bytes"`
	SizeMB    json.RawMessage `json:"size_mb"`
	Shape     string          `json:"shape"`
	Module    string          `json:"module"`
	Phase     string          `json:"phase"`
	Create    []string        `json:"create_stack_trace"`
	Release   []string        `json:"release_stack_trace"`
}

func (d *tracerDecoder) tensor(path string) (Tensor, error) {
	s := d.s
	t := Tensor{}
	start := s.Offset() // where the record starts (before any whitespace); field errors are reported here
	var raw rawTensor
	if err := s.Decode(&raw); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			field := path
			if te.Field != "" {
				field += "." + te.Field
			}
			return t, &input.Error{File: s.Name(), Offset: start + te.Offset, Field: field, Msg: fmt.Sprintf("want %s, got %s", jsonTypeName(te.Type), te.Value)}
		}
		return t, s.Wrap(path, err)
	}
	if raw.SizeBytes == nil {
		// size_mb alone is a rounded float; without size_bytes the byte totals would be guesses.
		return t, s.ErrAt(start, path, "missing size_bytes")
	}
	var err error
	if t.SizeBytes, err = s.RawInt(start, path+".size_bytes", raw.SizeBytes); err != nil {
		return t, err
	}
	if t.SizeBytes < 0 {
		return t, s.ErrAt(start, path+".size_bytes", "negative (%d)", t.SizeBytes)
	}
	if raw.SizeMB != nil {
		if t.SizeMB, err = s.RawFloat(start, path+".size_mb", raw.SizeMB); err != nil {
			return t, err
		}
		if t.SizeMB < 0 {
			return t, s.ErrAt(start, path+".size_mb", "negative (%v)", t.SizeMB)
		}
	}
	t.Shape, t.Module, t.Phase = raw.Shape, raw.Module, raw.Phase
	if dims, ok := ParseShape(t.Shape); ok {
		t.Dims = dims
	}
	// Errors found after decoding point at the start of the tensor record.
	if t.Create, err = d.stack(path+".create_stack_trace", raw.Create); err != nil {
		return t, err
	}
	if t.Release, err = d.stack(path+".release_stack_trace", raw.Release); err != nil {
		return t, err
	}
	return t, nil
}

// jsonTypeName names the Go type a JSON value was decoded into the way the schema speaks of it.
func jsonTypeName(t reflect.Type) string {
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Slice:
		if t.Elem().Kind() == reflect.String {
			return "an array of strings"
		}
		return "an array"
	case reflect.Struct:
		return "an object"
	}
	return t.String()
}

// stack interns a decoded creation or release stack (frame strings outermost first) and returns it innermost
// first; nil for an empty or missing list.
func (d *tracerDecoder) stack(path string, texts []string) (*Stack, error) {
	if len(texts) > maxTracerStackFrames {
		return nil, d.s.Errf(path, "more than %d frames", maxTracerStackFrames)
	}
	if len(texts) == 0 {
		return nil, nil
	}
	d.key.Reset()
	for _, t := range texts {
		d.key.WriteString(t)
		d.key.WriteByte(0)
	}
	if st, ok := d.stacks[d.key.String()]; ok {
		return st, nil
	}
	st := &Stack{Stack: snapshot.Stack{Frames: make([]snapshot.Frame, len(texts))}, Code: make([]string, len(texts))}
	for i, t := range texts {
		ft, ok := d.frames[t]
		if !ok {
			f, code := parseTracerFrame(t)
			ft = frameText{f: f, code: code}
			if len(d.frames) < maxTracerDistinctText {
				d.frames[t] = ft
			}
		}
		j := len(texts) - 1 - i // file order is outermost first
		st.Frames[j], st.Code[j] = ft.f, ft.code
	}
	if len(d.stacks) < maxTracerDistinctText {
		d.stacks[d.key.String()] = st
	}
	return st, nil
}

// Format is the format name of a tracer peak-memory JSON.
const Format = "tracer-json"
