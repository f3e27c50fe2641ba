// Package export writes a decoded snapshot in the formats other tools read: pprof profiles, Chrome/Perfetto trace
// JSON, folded stacks, the snapshot as JSON, and smaller snapshot pickles that the PyTorch web viewer can open.
//
// It imports snapshot, categorize and analyze (for the trace replay), and writes to the io.Writer it is
// given (Write picks the writer for a Format); the CLI chooses the file. It does not import results or plots.
package export

import (
	"fmt"
	"path"
	"slices"
	"strings"

	"github.com/memscan/memscan/internal/categorize"
	"github.com/memscan/memscan/internal/replay"
	"github.com/memscan/memscan/snapshot"
)

// Format is an export format.
type Format string

const (
	FormatPprof     Format = "pprof"
	FormatPerfetto  Format = "perfetto"
	FormatCollapsed Format = "collapsed"
	FormatJSON      Format = "json"
	FormatSlice     Format = "slice"
)

// Formats lists every export format in the order the CLI documents them.
var Formats = []Format{FormatPprof, FormatPerfetto, FormatCollapsed, FormatJSON, FormatSlice}

// ParseFormat validates a format name.
func ParseFormat(s string) (Format, error) {
	for _, f := range Formats {
		if string(f) == s {
			return f, nil
		}
	}
	return "", fmt.Errorf("unknown export format %q (want one of %s)", s, strings.Join(FormatNames(), ", "))
}

// FormatNames lists the names of Formats, in order.
func FormatNames() []string {
	names := make([]string, len(Formats))
	for i, f := range Formats {
		names[i] = string(f)
	}
	return names
}

// Classifier maps an allocation stack to its category and creation site ("file:line:function"). The CLI passes
// memscan's categorizer; DefaultClassifier is used when none is given.
type Classifier func(st *snapshot.Stack) (category, site string)

// DefaultClassifier puts everything in "uncategorized" and names the innermost frame the viewer would show as the
// site.
func DefaultClassifier(st *snapshot.Stack) (string, string) {
	return "uncategorized", InnermostSite(st)
}

// InnermostSite formats the innermost frame that survives the viewer's filter as "file:line:function", or
// "<non-python>" when there is none.
func InnermostSite(st *snapshot.Stack) string {
	if st != nil {
		for _, f := range st.Frames {
			if KeepFrame(f) {
				return fmt.Sprintf("%s:%d:%s", f.Filename, f.Line, f.Name)
			}
		}
	}
	return "<non-python>"
}

// Frames hidden by both PyTorch's viewer and _memory_viz: unwinder and interpreter plumbing that says nothing about
// who allocated.
var (
	omitFunctions = []string{"unwind::unwind", "CapturedTraceback::gather", "gather_with_cpp", "_start",
		"__libc_start_main", "PyEval_", "PyObject_", "PyFunction_"}
	omitFilenames = []string{"core/boxing", "/Register", "/Redispatch", "pythonrun.c", "Modules/main.c",
		"Objects/call.c", "Objects/methodobject.c", "pycore_ceval.h", "ceval.c", "cpython/abstract.h"}
)

// KeepFrame reports whether the viewer shows frame f.
func KeepFrame(f snapshot.Frame) bool {
	for _, s := range omitFunctions {
		if strings.Contains(f.Name, s) {
			return false
		}
	}
	for _, s := range omitFilenames {
		if strings.Contains(f.Filename, s) {
			return false
		}
	}
	return true
}

// shortFrame formats a frame as _memory_viz does in folded stacks: basename(filename):line:name, where the basename
// is taken after the last '/' only (so Windows paths stay whole, as upstream).
func shortFrame(f snapshot.Frame) string {
	name := f.Filename
	if i := strings.LastIndexByte(name, '/'); i >= 0 {
		name = name[i+1:]
	}
	return fmt.Sprintf("%s:%d:%s", name, f.Line, f.Name)
}

// baseName is path.Base for the '/'-separated file names found in frames.
func baseName(s string) string {
	if s == "" {
		return s
	}
	return path.Base(s)
}

// memoized returns classify, or DefaultClassifier when it is nil, remembering the answer per stack: stacks are
// shared through the pickle memo, so most calls are map lookups.
func memoized(classify Classifier) Classifier {
	if classify == nil {
		classify = DefaultClassifier
	}
	type answer struct{ category, site string }
	seen := make(map[*snapshot.Stack]answer)
	return func(st *snapshot.Stack) (string, string) {
		if a, ok := seen[st]; ok {
			return a.category, a.site
		}
		c, s := classify(st)
		seen[st] = answer{c, s}
		return c, s
	}
}

// RulesClassifier categorizes stacks with memscan's category rules (categorize.Default() when nil) and names sites
// exactly as memscan's analysis does, so exported labels match the report. Not safe for concurrent use.
func RulesClassifier(rules *categorize.Rules) Classifier {
	c := categorize.NewCategorizer(rules)
	return func(st *snapshot.Stack) (string, string) {
		d := c.Stack(st)
		site := d.Site
		if site == "" {
			site = categorize.NoStackSite
		}
		return d.Category, site
	}
}

// replayedCategory is the category the analysis gives a replayed allocation whose stack the classifier put in
// category: the trace's own category where the event carries one (profile_plot snapshots), else the stack's,
// which the lifetime overrules where the stack is missing or names only generic machinery (categorize.Attribute).
// Without it the export would file the stackless backward allocations under Unknown, where the report says
// Temporary or Gradient.
func replayedCategory(r *replay.DeviceTrace, l *replay.Lifetime, category string) string {
	if l.Event >= 0 {
		if c := r.EventExtra(l.Event).Category; c != "" {
			return c
		}
	}
	d := categorize.Decision{Category: category}
	return categorize.Attribute(d, categorize.Life{Start: l.Start, End: l.End}, r.Timeline()).Category
}

// replayedCategories is replayedCategory for every lifetime ls of r (in order), classify naming each stack's
// category, with the loss's tensors that their stacks do not name made Loss/Logits (categorize.LossPattern), as
// the analysis makes them.
func replayedCategories(r *replay.DeviceTrace, ls []replay.Lifetime, classify func(*snapshot.Stack) string) []string {
	cats := make([]string, len(ls))
	for k := range ls {
		cats[k] = replayedCategory(r, &ls[k], classify(ls[k].Stack))
	}
	for _, k := range categorize.LossPattern(r.Timeline(), len(cats), func(i int) categorize.LossBlock {
		return categorize.LossBlock{Start: ls[i].Start, Size: ls[i].Size, Category: cats[i]}
	}) {
		cats[k] = categorize.LossLogits
	}
	return cats
}

// devices lists the device ordinals that have segments or trace entries, ascending.
func devices(s *snapshot.Snapshot) []int {
	seen := make(map[int]bool)
	for i := range s.Segments {
		seen[s.Segments[i].Device] = true
	}
	for d, t := range s.DeviceTraces {
		if len(t) > 0 {
			seen[d] = true
		}
	}
	out := make([]int, 0, len(seen))
	for d := range seen {
		out = append(out, d)
	}
	slices.Sort(out)
	return out
}
