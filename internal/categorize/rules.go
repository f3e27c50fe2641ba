// Package categorize maps an allocation's stack to a memory category (Expert/MoE, Attention, Optimizer State, ...)
// with rules: an embedded default set plus optional user rule files. Every decision records the rule and the frame
// that decided it, so a report can say why a block landed where it did.
//
// # How a stack is decided
//
// Frames are stored innermost first (index 0 is the deepest call). A frame is classified as
//
//   - noise: it matches a noise entry (stack-capture plumbing, interpreter frames, torch's generic module call
//     machinery, unresolved C++ frames "??"). Noise frames never decide and are never reported as the site;
//   - native: a C++ frame (its file does not end in .py and is not a "<frozen ...>" pseudo-file);
//   - plumbing: a Python frame of a training-loop framework (Lightning's loops, trainer and strategies,
//     accelerate's Accelerator, the Hugging Face Trainer). It calls the user's code (training_step, the closure
//     that optimizer.step runs) and so sits on nearly every stack; it never decides and is not the user's site;
//   - framework: a Python frame that matches a framework entry (torch, the standard library, generated code);
//   - user: every other Python frame (the user's program and the libraries it calls).
//
// The walk then makes four passes, each innermost first, and stops at the first frame matched by an applicable rule:
//
//  1. user frames, ordinary rules — so a user's model.py:forward decides before torch/nn/modules/linear.py;
//  2. framework frames, ordinary rules — torch/optim/adamw.py _init_group still decides when no user frame does;
//  3. native frames, rules marked native (e.g. autograd's AccumulateGrad, NCCL);
//  4. all meaningful frames, rules marked fallback (e.g. "inside some forward" → Activation).
//
// When several rules match the deciding frame, the highest priority wins; at equal priority the earlier rule in the
// merged list (user rules before defaults) wins.
//
// A rule marked calls_back matches code that calls back into other code: optimizer.step(closure) runs the
// closure's forward and backward inside step. Such a rule decides only when no Python frame inside the matched one
// is plumbing or is matched by a rule of another category (ordinary, or fallback on a user frame): the
// allocation then belongs to the callback, and the walk goes on as if the rule had not matched. A stack with no frames is Unknown with reason "no stack recorded";
// a stack where nothing matched is Unknown with the first meaningful frame as its site.
package categorize

import (
	_ "embed"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"sync"
	"unicode"

	"github.com/memscan/memscan/internal/configfile"
	"github.com/memscan/memscan/internal/suggest"
)

// Category names used by the default rules. User rules may introduce others.
const (
	ExpertMoE      = "Expert/MoE"
	Attention      = "Attention"
	LinearMatMul   = "Linear/MatMul"
	OptimizerState = "Optimizer State"
	Communication  = "Communication"
	FSDP           = "FSDP"
	Gradient       = "Gradient"
	Parameters     = "Parameters/Weights"
	Embedding      = "Embedding"
	Normalization  = "Normalization"
	Activation     = "Activation"
	LossLogits     = "Loss/Logits"
	DataInput      = "Data/Input"
	Autograd       = "Autograd"
	// KVCache holds inference key/value caches.
	KVCache = "KV Cache"
	// Temporary holds transient allocations that only their lifetime identifies (no stack rule decided): forward
	// and backward workspaces, activation gradients, optimizer scratch.
	Temporary = "Temporary"
	Unknown   = "Unknown"
)

// DefaultCategories lists the built-in categories in report order.
func DefaultCategories() []string {
	return []string{ExpertMoE, Attention, LinearMatMul, OptimizerState, Communication, FSDP, Gradient, Parameters,
		Embedding, Normalization, Activation, LossLogits, DataInput, Autograd, KVCache, Temporary, Unknown}
}

//go:embed defaults.yaml
var defaultRulesYAML []byte

// File is the on-disk form of a rule file (JSON or YAML).
type File struct {
	Version int `json:"version" yaml:"version"`
	// NewCategories declares the categories this file's rules introduce; a rule's category must be a known one
	// or be declared here, so that a misspelt "Atention" is an error rather than a new category.
	NewCategories []string      `json:"new_categories,omitempty" yaml:"new_categories,omitempty"`
	Noise         []MatcherSpec `json:"noise,omitempty" yaml:"noise,omitempty"`
	Framework     []MatcherSpec `json:"framework,omitempty" yaml:"framework,omitempty"`
	// Plumbing lists training-loop frameworks whose frames never decide (see the package documentation).
	Plumbing []MatcherSpec `json:"plumbing,omitempty" yaml:"plumbing,omitempty"`
	Rules    []RuleSpec    `json:"rules,omitempty" yaml:"rules,omitempty"`
}

// MatcherSpec says which frames an entry applies to. Every field that is set must match (AND); within a list any
// entry may match (OR). Substrings are case-insensitive and see the filename with backslashes turned into slashes;
// regexps see the same text with its original case.
type MatcherSpec struct {
	Name     string `json:"name" yaml:"name"`
	Disabled bool   `json:"disabled,omitempty" yaml:"disabled,omitempty"`
	// File lists substrings of the frame's filename.
	File []string `json:"file,omitempty" yaml:"file,omitempty"`
	// Function lists substrings of the frame's function name.
	Function []string `json:"function,omitempty" yaml:"function,omitempty"`
	// Module lists dotted module paths matched on component boundaries against the module derived from the
	// filename (the part after site-packages/, or from torch/ on, else the whole path).
	Module         []string `json:"module,omitempty" yaml:"module,omitempty"`
	FileRegexp     string   `json:"file_regexp,omitempty" yaml:"file_regexp,omitempty"`
	FunctionRegexp string   `json:"function_regexp,omitempty" yaml:"function_regexp,omitempty"`
	// ExcludeFile lists filename substrings that veto a match.
	ExcludeFile []string `json:"exclude_file,omitempty" yaml:"exclude_file,omitempty"`
}

// RuleSpec is one categorization rule.
type RuleSpec struct {
	MatcherSpec `yaml:",inline"`
	Category    string `json:"category" yaml:"category"`
	Priority    int    `json:"priority,omitempty" yaml:"priority,omitempty"`
	// Native rules apply to C++ frames (pass 3) instead of Python frames.
	Native bool `json:"native,omitempty" yaml:"native,omitempty"`
	// Fallback rules apply only when no ordinary or native rule decided (pass 4).
	Fallback bool `json:"fallback,omitempty" yaml:"fallback,omitempty"`
	// CallsBack marks code that calls back into its caller's code (optimizer.step(closure)): the rule decides only
	// when no frame inside the matched one belongs to another category or to the training loop.
	CallsBack bool `json:"calls_back,omitempty" yaml:"calls_back,omitempty"`
}

// matcher is a compiled MatcherSpec.
type matcher struct {
	name      string
	file      []string // lower-cased
	function  []string // lower-cased
	module    []string // lower-cased, dotted
	fileRe    *regexp.Regexp
	funcRe    *regexp.Regexp
	exclude   []string // lower-cased
	hasFilter bool
}

// rule is a compiled RuleSpec.
type rule struct {
	matcher
	category  string
	priority  int
	native    bool
	fallback  bool
	callsBack bool
}

// Rules is a compiled, immutable rule set, safe for concurrent use.
type Rules struct {
	noise      []matcher
	framework  []matcher
	plumbing   []matcher
	rules      []rule
	categories []string
	specs      File // merged specs, for Describe
}

var defaultRules = sync.OnceValues(func() (*Rules, error) {
	f, err := parseFile("defaults.yaml", defaultRulesYAML)
	if err != nil {
		return nil, err
	}
	return compile("defaults.yaml", f)
})

// Default returns the embedded default rules. It panics only if the embedded file is broken, which the tests catch.
func Default() *Rules {
	r, err := defaultRules()
	if err != nil {
		panic(fmt.Sprintf("categorize: embedded default rules: %v", err))
	}
	return r
}

// Limits of a rule file, checked while it is parsed. A rule is tried against every distinct frame of an input,
// so the number of rules multiplies the categorization's cost (a million rules once took 43 s and 1.3 GB on a
// 20 MB snapshot).
const (
	maxRuleFileBytes = 4 << 20
	// MaxRules bounds the entries of each section of a rule file (rules, noise, framework, plumbing).
	MaxRules        = 4096
	maxPatternBytes = 4096 // one substring or regular expression
	maxNameBytes    = 256  // a rule or category name
)

var ruleLimits = configfile.Limits{MaxBytes: maxRuleFileBytes, MaxDepth: 8, MaxItems: MaxRules, MaxValues: 1 << 20}

// LoadFile reads a user rule file (JSON or YAML) and merges it over base (Default() when base is nil).
func LoadFile(path string, base *Rules) (*Rules, error) {
	doc, err := configfile.ReadFile(path, "a rule file", ruleLimits)
	if err != nil {
		return nil, err
	}
	return parseDoc(doc, base)
}

// Parse parses a user rule file and merges it over base (Default() when base is nil). An entry whose name matches
// a base entry replaces it (or, with disabled: true, removes it); other entries are added, user rules first. A
// rule's category must be one of base's categories or be listed under new_categories.
func Parse(name string, data []byte, base *Rules) (*Rules, error) {
	doc, err := configfile.Parse(name, data, configfile.IsYAML(name, data), ruleLimits)
	if err != nil {
		return nil, err
	}
	return parseDoc(doc, base)
}

func parseDoc(doc *configfile.Doc, base *Rules) (*Rules, error) {
	if base == nil {
		base = Default()
	}
	f, err := decodeFile(doc, base.Categories())
	if err != nil {
		return nil, err
	}
	merged := File{
		Version:       f.Version,
		NewCategories: mergeNames(base.specs.NewCategories, f.NewCategories),
		Noise:         mergeByName(f.Noise, base.specs.Noise),
		Framework:     mergeByName(f.Framework, base.specs.Framework),
		Plumbing:      mergeByName(f.Plumbing, base.specs.Plumbing),
		Rules:         mergeByName(f.Rules, base.specs.Rules),
	}
	return compile(doc.Name, merged)
}

// parseFile decodes and validates the embedded defaults.
func parseFile(name string, data []byte) (File, error) {
	doc, err := configfile.Parse(name, data, true, ruleLimits)
	if err != nil {
		return File{}, err
	}
	return decodeFile(doc, DefaultCategories())
}

// decodeFile decodes and validates one rule file; known are the categories its rules may use besides those it
// declares under new_categories.
func decodeFile(doc *configfile.Doc, known []string) (File, error) {
	var f File
	if doc.Root.Kind != configfile.Object {
		return f, doc.Errorf(doc.Root, "", "a rule file is an object with version, rules, noise, framework and plumbing; got %s", doc.Root.Kind)
	}
	if err := doc.Decode(&f); err != nil {
		return f, err
	}
	if f.Version != 0 && f.Version != 1 {
		return f, doc.ErrorAt("version", "unsupported rule file version %d (want 1)", f.Version)
	}
	if err := validate(doc, f, known); err != nil {
		return f, err
	}
	return f, nil
}

// validate checks names, categories and that every enabled entry has something to match on.
func validate(doc *configfile.Doc, f File, known []string) error {
	checkText := func(at, what, s string, limit int) error {
		if len(s) > limit {
			return doc.ErrorAt(at, "%s is %d bytes long; at most %d", what, len(s), limit)
		}
		for _, r := range s {
			if unicode.IsControl(r) {
				return doc.ErrorAt(at, "%s %q holds a control character", what, s)
			}
		}
		return nil
	}
	categories := slices.Clone(known)
	for i, c := range f.NewCategories {
		at := fmt.Sprintf("new_categories[%d]", i)
		if strings.TrimSpace(c) == "" {
			return doc.ErrorAt(at, "empty category name")
		}
		if err := checkText(at, "category name", c, maxNameBytes); err != nil {
			return err
		}
		if slices.Contains(categories, c) {
			return doc.ErrorAt(at, "%q is already a category", c)
		}
		categories = append(categories, c)
	}
	checkMatcher := func(field string, i int, m MatcherSpec) error {
		at := fmt.Sprintf("%s[%d]", field, i)
		if strings.TrimSpace(m.Name) == "" {
			return doc.ErrorAt(at+".name", "missing rule name")
		}
		if err := checkText(at+".name", "name", m.Name, maxNameBytes); err != nil {
			return err
		}
		if m.Disabled {
			return nil
		}
		if len(m.File) == 0 && len(m.Function) == 0 && len(m.Module) == 0 && m.FileRegexp == "" && m.FunctionRegexp == "" {
			return doc.ErrorAt(at, "%q: no file, function, module, file_regexp or function_regexp to match on", m.Name)
		}
		for _, list := range []struct {
			field string
			v     []string
		}{{"file", m.File}, {"function", m.Function}, {"module", m.Module}, {"exclude_file", m.ExcludeFile}} {
			for j, s := range list.v {
				p := fmt.Sprintf("%s.%s[%d]", at, list.field, j)
				if s == "" {
					return doc.ErrorAt(p, "empty pattern matches everything")
				}
				if len(s) > maxPatternBytes {
					return doc.ErrorAt(p, "pattern is %d bytes long; at most %d", len(s), maxPatternBytes)
				}
			}
		}
		for _, re := range []struct{ field, v string }{{"file_regexp", m.FileRegexp}, {"function_regexp", m.FunctionRegexp}} {
			if re.v == "" {
				continue
			}
			if len(re.v) > maxPatternBytes {
				return doc.ErrorAt(at+"."+re.field, "regular expression is %d bytes long; at most %d", len(re.v), maxPatternBytes)
			}
			if _, err := regexp.Compile(re.v); err != nil {
				return doc.ErrorAt(at+"."+re.field, "%v", err)
			}
		}
		return nil
	}
	for _, sec := range []struct {
		field string
		list  []MatcherSpec
	}{{"noise", f.Noise}, {"framework", f.Framework}, {"plumbing", f.Plumbing}} {
		seen := map[string]bool{}
		for i, m := range sec.list {
			if err := checkMatcher(sec.field, i, m); err != nil {
				return err
			}
			if seen[m.Name] {
				return doc.ErrorAt(fmt.Sprintf("%s[%d].name", sec.field, i), "duplicate name %q", m.Name)
			}
			seen[m.Name] = true
		}
	}
	seen := map[string]bool{}
	for i, r := range f.Rules {
		at := fmt.Sprintf("rules[%d]", i)
		if err := checkMatcher("rules", i, r.MatcherSpec); err != nil {
			return err
		}
		if seen[r.Name] {
			return doc.ErrorAt(at+".name", "duplicate rule name %q", r.Name)
		}
		seen[r.Name] = true
		if r.Disabled {
			continue
		}
		switch {
		case strings.TrimSpace(r.Category) == "":
			return doc.ErrorAt(at+".category", "%q: missing category", r.Name)
		case !slices.Contains(categories, r.Category):
			hint := strings.TrimPrefix(suggest.Hint(r.Category, categories, suggest.Quoted), "; ")
			if hint != "" {
				hint += " "
			}
			return doc.ErrorAt(at+".category", "%q: unknown category %q (%sa new category must be listed under new_categories; known: %s)",
				r.Name, r.Category, hint, strings.Join(categories, ", "))
		case r.Native && r.Fallback:
			return doc.ErrorAt(at, "%q: native and fallback cannot both be set", r.Name)
		case r.CallsBack && (r.Native || r.Fallback):
			return doc.ErrorAt(at, "%q: calls_back applies to ordinary Python rules, not native or fallback ones", r.Name)
		}
	}
	return nil
}

// mergeNames is base followed by the names of user it does not hold.
func mergeNames(base, user []string) []string {
	out := slices.Clone(base)
	for _, n := range user {
		if !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	return out
}

// key is the name that user entries replace base entries by.
func (m MatcherSpec) key() string { return m.Name }

// mergeByName puts the user's entries first, then the base entries they do not name.
func mergeByName[T interface{ key() string }](user, base []T) []T {
	named := map[string]bool{}
	var out []T
	for _, m := range user {
		named[m.key()] = true
		out = append(out, m)
	}
	for _, m := range base {
		if !named[m.key()] {
			out = append(out, m)
		}
	}
	return out
}

// compile turns validated specs into matchers; disabled entries are kept in specs but not compiled.
func compile(name string, f File) (*Rules, error) {
	r := &Rules{specs: f}
	for _, sec := range []struct {
		field string
		specs []MatcherSpec
		out   *[]matcher
	}{{"noise", f.Noise, &r.noise}, {"framework", f.Framework, &r.framework}, {"plumbing", f.Plumbing, &r.plumbing}} {
		for _, m := range sec.specs {
			if m.Disabled {
				continue
			}
			cm, err := compileMatcher(m)
			if err != nil {
				return nil, fmt.Errorf("%s: %s %q: %w", name, sec.field, m.Name, err)
			}
			*sec.out = append(*sec.out, cm)
		}
	}
	seenCat := map[string]bool{}
	for _, c := range DefaultCategories() {
		seenCat[c] = true
		r.categories = append(r.categories, c)
	}
	for _, s := range f.Rules {
		if s.Disabled {
			continue
		}
		cm, err := compileMatcher(s.MatcherSpec)
		if err != nil {
			return nil, fmt.Errorf("%s: rule %q: %w", name, s.Name, err)
		}
		r.rules = append(r.rules, rule{matcher: cm, category: s.Category, priority: s.Priority, native: s.Native, fallback: s.Fallback,
			callsBack: s.CallsBack})
		if !seenCat[s.Category] {
			seenCat[s.Category] = true
			// Keep Unknown last: insert user categories before it.
			r.categories = append(r.categories[:len(r.categories)-1], s.Category, Unknown)
		}
	}
	return r, nil
}

func compileMatcher(m MatcherSpec) (matcher, error) {
	cm := matcher{name: m.Name}
	lower := func(in []string) []string {
		out := make([]string, len(in))
		for i, s := range in {
			out[i] = strings.ToLower(strings.ReplaceAll(s, `\`, "/"))
		}
		return out
	}
	cm.file = lower(m.File)
	cm.function = lower(m.Function)
	cm.exclude = lower(m.ExcludeFile)
	for _, s := range m.Module {
		cm.module = append(cm.module, strings.Trim(strings.ToLower(s), "."))
	}
	var err error
	if m.FileRegexp != "" {
		if cm.fileRe, err = regexp.Compile(m.FileRegexp); err != nil {
			return cm, fmt.Errorf("file_regexp: %w", err)
		}
	}
	if m.FunctionRegexp != "" {
		if cm.funcRe, err = regexp.Compile(m.FunctionRegexp); err != nil {
			return cm, fmt.Errorf("function_regexp: %w", err)
		}
	}
	cm.hasFilter = len(cm.file)+len(cm.function)+len(cm.module) > 0 || cm.fileRe != nil || cm.funcRe != nil
	return cm, nil
}

// Categories returns every category the rules can produce, defaults first and Unknown last.
func (r *Rules) Categories() []string { return append([]string(nil), r.categories...) }

// Specs returns the merged rule specifications (defaults plus user file), e.g. for printing the active rules.
func (r *Rules) Specs() File { return r.specs }
