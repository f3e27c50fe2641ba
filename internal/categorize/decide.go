package categorize

import (
	"strconv"
	"strings"

	"github.com/memscan/memscan/snapshot"
)

// Reasons recorded on Unknown decisions.
const (
	ReasonNoStack   = "no stack recorded"
	ReasonNoMatch   = "no rule matched"
	ReasonOnlyNoise = "only framework-internal frames"
)

// Decision is the category of one stack and why.
type Decision struct {
	Category string
	// Rule is the name of the deciding rule; empty for Unknown.
	Rule string
	// Site is where the allocation came from as the user sees it: the innermost user frame (file:line:function)
	// when the stack has one, else the deciding frame, so that top-consumer tables point at the user's own line
	// (model.py:42:__init__) rather than at torch/nn/modules/linear.py.
	Site string
	// Frame is the deciding frame as file:line:function (for Unknown: the first meaningful frame, if any).
	Frame string
	// FrameIndex is the index of the deciding frame in the stack (innermost = 0), -1 when none.
	FrameIndex int
	// Pass is the walk pass that decided: "user", "framework", "native", "fallback", or "" for Unknown.
	Pass string
	// Reason explains Unknown decisions.
	Reason string
}

// NoStackSite names the site of allocations recorded without a stack.
const NoStackSite = "<no stack recorded>"

// SiteName is the site as reports show it: Site, or NoStackSite when the allocation had no stack.
func (d Decision) SiteName() string {
	if d.Site == "" {
		return NoStackSite
	}
	return d.Site
}

// frameKind classifies a frame for the walk.
type frameKind uint8

const (
	kindNoise frameKind = iota
	kindUser
	kindFramework
	kindNative
	kindPlumbing // training-loop framework: never decides, never the user's site
)

// frameView holds the normalised forms of a frame used for matching.
type frameView struct {
	file      string // slashes, original case
	fileLower string
	funcName  string
	funcLower string
	module    string // dotted, lower case, surrounded by dots for boundary matching
}

func viewOf(f *snapshot.Frame) frameView {
	file := strings.ReplaceAll(f.Filename, `\`, "/")
	v := frameView{file: file, fileLower: strings.ToLower(file), funcName: f.Name, funcLower: strings.ToLower(f.Name)}
	v.module = "." + modulePath(v.fileLower) + "."
	return v
}

// modulePath derives a dotted module path from a lower-cased, slash-normalised filename: the part after the last
// site-packages/ or dist-packages/, else from the first torch/ directory, else the whole path without its drive.
func modulePath(p string) string {
	p = strings.TrimSuffix(p, ".py")
	if i := max(strings.LastIndex(p, "site-packages/"), strings.LastIndex(p, "dist-packages/")); i >= 0 {
		p = p[i+len("site-packages/"):]
	} else if i := strings.Index(p, "/torch/"); i >= 0 {
		p = p[i+1:]
	} else if len(p) >= 2 && p[1] == ':' {
		p = p[2:]
	}
	p = strings.Trim(p, "/")
	return strings.ReplaceAll(p, "/", ".")
}

// match reports whether the matcher applies to the frame.
func (m *matcher) match(v *frameView) bool {
	if !m.hasFilter {
		return false
	}
	if len(m.file) > 0 && !containsAny(v.fileLower, m.file) {
		return false
	}
	if len(m.function) > 0 && !containsAny(v.funcLower, m.function) {
		return false
	}
	if len(m.module) > 0 {
		ok := false
		for _, mod := range m.module {
			if strings.Contains(v.module, "."+mod+".") {
				ok = true
				break
			}
		}
		if !ok {
			return false
		}
	}
	if m.fileRe != nil && !m.fileRe.MatchString(v.file) {
		return false
	}
	if m.funcRe != nil && !m.funcRe.MatchString(v.funcName) {
		return false
	}
	if len(m.exclude) > 0 && containsAny(v.fileLower, m.exclude) {
		return false
	}
	return true
}

func containsAny(s string, subs []string) bool {
	for _, sub := range subs {
		if strings.Contains(s, sub) {
			return true
		}
	}
	return false
}

// isNative reports whether a frame is a C++ frame: Python frames name a .py file or an interpreter pseudo-file.
func isNative(fileLower string) bool {
	if strings.HasSuffix(fileLower, ".py") || strings.HasSuffix(fileLower, ".pyx") || strings.HasPrefix(fileLower, "<") {
		return false
	}
	// TorchScript and inductor code objects carry .py files; everything else (??, "", .cpp, .h, .c, .so) is native.
	return true
}

func (r *Rules) kind(v *frameView) frameKind {
	for i := range r.noise {
		if r.noise[i].match(v) {
			return kindNoise
		}
	}
	if isNative(v.fileLower) {
		return kindNative
	}
	for i := range r.plumbing {
		if r.plumbing[i].match(v) {
			return kindPlumbing
		}
	}
	for i := range r.framework {
		if r.framework[i].match(v) {
			return kindFramework
		}
	}
	return kindUser
}

// Site formats a frame as file:line:function, trimming the install prefix up to site-packages/ so sites stay
// readable; user paths are kept whole.
func Site(f *snapshot.Frame) string {
	file := f.Filename
	for _, marker := range []string{"site-packages", "dist-packages"} {
		if i := strings.LastIndex(file, marker); i >= 0 && i+len(marker) < len(file) {
			file = file[i+len(marker)+1:]
			break
		}
	}
	return file + ":" + strconv.Itoa(f.Line) + ":" + f.Name
}

// frameInfo is everything the walk needs to know about one frame: its kind and, per pass, the best matching rule
// (index into Rules.rules, −1 when none).
type frameInfo struct {
	kind               frameKind
	ordinary, fallback int // for user and framework frames
	native             int // for native frames
}

// info classifies a frame and finds its best rules. When several rules match, the highest priority wins; at equal
// priority the earlier rule.
func (r *Rules) info(f *snapshot.Frame) frameInfo {
	v := viewOf(f)
	fi := frameInfo{kind: r.kind(&v), ordinary: -1, fallback: -1, native: -1}
	if fi.kind == kindNoise || fi.kind == kindPlumbing {
		return fi
	}
	for j := range r.rules {
		ru := &r.rules[j]
		var slot *int
		switch {
		case fi.kind == kindNative && ru.native:
			slot = &fi.native
		case fi.kind != kindNative && ru.fallback:
			slot = &fi.fallback
		case fi.kind != kindNative && !ru.native && !ru.fallback:
			slot = &fi.ordinary
		default:
			continue
		}
		if (*slot < 0 || ru.priority > r.rules[*slot].priority) && ru.match(&v) {
			*slot = j
		}
	}
	return fi
}

// Decide categorizes one stack (frames innermost first). See the package documentation for the walk.
func (r *Rules) Decide(frames []snapshot.Frame) Decision {
	infos := make([]frameInfo, len(frames))
	for i := range frames {
		infos[i] = r.info(&frames[i])
	}
	return r.decide(frames, infos)
}

func (r *Rules) decide(frames []snapshot.Frame, infos []frameInfo) Decision {
	if len(frames) == 0 {
		return Decision{Category: Unknown, FrameIndex: -1, Reason: ReasonNoStack}
	}
	passes := [...]struct {
		name string
		rule func(*frameInfo) int
	}{
		{"user", func(fi *frameInfo) int { return pick(fi.kind == kindUser, fi.ordinary) }},
		{"framework", func(fi *frameInfo) int { return pick(fi.kind == kindFramework, fi.ordinary) }},
		{"native", func(fi *frameInfo) int { return pick(fi.kind == kindNative, fi.native) }},
		{"fallback", func(fi *frameInfo) int { return pick(fi.kind == kindUser || fi.kind == kindFramework, fi.fallback) }},
	}
	for _, p := range passes {
		for i := range infos {
			if j := p.rule(&infos[i]); j >= 0 && !r.insideCallback(infos, i, j) {
				return Decision{Category: r.rules[j].category, Rule: r.rules[j].name, Site: userSite(frames, infos, i),
					Frame: Site(&frames[i]), FrameIndex: i, Pass: p.name}
			}
		}
	}
	// Nothing matched: report the most useful frame as the site (user, then framework, then native).
	for _, want := range []frameKind{kindUser, kindFramework, kindPlumbing, kindNative} {
		for i := range infos {
			if infos[i].kind == want {
				return Decision{Category: Unknown, Site: userSite(frames, infos, i), Frame: Site(&frames[i]), FrameIndex: i,
					Reason: ReasonNoMatch}
			}
		}
	}
	return Decision{Category: Unknown, Site: Site(&frames[0]), Frame: Site(&frames[0]), FrameIndex: 0,
		Reason: ReasonOnlyNoise}
}

// insideCallback reports whether rule j, matched at frame i, only encloses the allocation: the rule is calls_back
// (optimizer.step(closure)) and a Python frame inside i is the training loop's or is matched by a rule of another
// category, so the allocation was made by the callback (the closure's forward or backward), not by the code the
// rule names. Fallback rules count on user frames only: a user's forward inside step is the closure's, while
// generated code (framework) inside a compiled optimizer step is the step's own.
func (r *Rules) insideCallback(infos []frameInfo, i, j int) bool {
	if !r.rules[j].callsBack {
		return false
	}
	cat := r.rules[j].category
	other := func(k int) bool { return k >= 0 && r.rules[k].category != cat }
	for k := range i {
		fi := &infos[k]
		switch fi.kind {
		case kindPlumbing:
			return true
		case kindUser:
			if other(fi.ordinary) || fi.ordinary < 0 && other(fi.fallback) {
				return true
			}
		case kindFramework:
			if other(fi.ordinary) {
				return true
			}
		}
	}
	return false
}

// userSite is the innermost user frame's site, or the deciding frame's when the stack has no user frame.
func userSite(frames []snapshot.Frame, infos []frameInfo, deciding int) string {
	for i := range infos {
		if infos[i].kind == kindUser {
			return Site(&frames[i])
		}
	}
	return Site(&frames[deciding])
}

func pick(ok bool, j int) int {
	if ok {
		return j
	}
	return -1
}

// Categorizer caches decisions per *snapshot.Stack: decoded snapshots share one Stack among every block and trace
// entry that pickled the same frame list, so each distinct stack is walked once. Not safe for concurrent use; make
// one per goroutine (the Rules it reads are shared and immutable).
type Categorizer struct {
	rules  *Rules
	cache  map[*snapshot.Stack]Decision
	frames map[snapshot.Frame]frameInfo // distinct stacks share most frames; match each frame once
	infos  []frameInfo                  // scratch
}

// NewCategorizer returns a categorizer over r (Default() when nil).
func NewCategorizer(r *Rules) *Categorizer {
	if r == nil {
		r = Default()
	}
	return &Categorizer{rules: r, cache: make(map[*snapshot.Stack]Decision), frames: make(map[snapshot.Frame]frameInfo)}
}

// Rules returns the rules the categorizer applies.
func (c *Categorizer) Rules() *Rules { return c.rules }

// Stack categorizes s; a nil or frameless stack is Unknown with reason "no stack recorded" (PyTorch writes an
// empty frame list where it recorded no stack).
func (c *Categorizer) Stack(s *snapshot.Stack) Decision {
	if s == nil || len(s.Frames) == 0 {
		return Decision{Category: Unknown, FrameIndex: -1, Reason: ReasonNoStack}
	}
	if d, ok := c.cache[s]; ok {
		return d
	}
	c.infos = c.infos[:0]
	for i := range s.Frames {
		fi, ok := c.frames[s.Frames[i]]
		if !ok {
			fi = c.rules.info(&s.Frames[i])
			c.frames[s.Frames[i]] = fi
		}
		c.infos = append(c.infos, fi)
	}
	d := c.rules.decide(s.Frames, c.infos)
	c.cache[s] = d
	return d
}

// CacheSize is the number of distinct stacks decided so far.
func (c *Categorizer) CacheSize() int { return len(c.cache) }
