// Package results is memscan's presentation layer for everything but drawing: every text, Markdown, HTML, JSON
// and msgpack renderer, and every file and directory memscan writes. It renders each report model as computed by
// its package: report.Run (analysis_report.txt, README.md, report.html, summary.json, report.msgpack and the
// mapping of reports to charts), static.Report (console view, static_report.{md,json} and its charts),
// calibrate.Calibration and calibrate.Applied (console table, calibration.md/json, corrections.json), the GPU
// catalogue; run directories (written, and read back as one side of memscan compare), `latest`, and plain and
// atomic file writers. Every renderer of an report.Report switches once on its Part; each kind's sections and
// charts are in a file of its own (snapshot.go, tracer.go, timeline.go, log.go).
//
// It may import the packages whose models it renders (analyze, static, calibrate and the cross-run packages),
// plots for drawing and units for sizes and JSON; nothing but the CLI imports it. The packages that compute
// reports never import it, and it computes nothing they could: a number appears here only as rendered.
package results

import (
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/memscan/memscan/internal/atomicfile"
	"github.com/memscan/memscan/internal/input"
)

// maxRunDirSuffix bounds the collision loop; reaching it means something else keeps creating these names.
const maxRunDirSuffix = 10000

// TimestampLayout is the time prefix of run directory names.
const TimestampLayout = "20060102_150405"

// NewRunDir creates <root>/<YYYYMMDD_HHMMSS>_<name>/ and returns its path. It never reuses an existing
// directory: os.Mkdir is the exclusive create, and on collision (two runs in the same second, in this process or
// another) it tries _2, _3, ... so concurrent runs always get distinct directories.
func NewRunDir(root, name string, now time.Time) (string, error) {
	name = SanitizeName(name)
	if err := os.MkdirAll(root, 0o755); err != nil {
		return "", &atomicfile.Error{Op: "creating results root", Err: err}
	}
	base := filepath.Join(root, now.Format(TimestampLayout)+"_"+name)
	for i := 1; i <= maxRunDirSuffix; i++ {
		dir := base
		if i > 1 {
			dir = base + "_" + strconv.Itoa(i)
		}
		err := os.Mkdir(dir, 0o755)
		if err == nil {
			return dir, nil
		}
		if !errors.Is(err, fs.ErrExist) {
			return "", &atomicfile.Error{Op: "creating run directory", Err: err}
		}
	}
	return "", &atomicfile.Error{Op: "creating run directory", Path: base, Err: fmt.Errorf("%d names already taken", maxRunDirSuffix)}
}

// StagedRunDir is a run directory written under a hidden temporary name in the results root and given its
// final name (that of NewRunDir) only once complete, so that neither a reader listing the root nor `latest`
// ever meets a half-written run (a full disk used to leave a truncated report.msgpack and no README.md).
//
// While it is written the directory is locked (flock, where the platform has it); a run killed before it could
// remove its staging directory (SIGKILL, a node lost, an OOM kill) leaves it unlocked, and the next run in the
// same root removes it (CleanStale).
type StagedRunDir struct {
	// Dir is where the run's files are written until Commit.
	Dir  string
	root string
	name string
	now  time.Time
	lock io.Closer // the held lock, nil where none could be taken
}

// stagePrefix starts the names of run directories being written; walks skip them as hidden.
const stagePrefix = ".partial-"

// NewStagedRunDir creates the temporary directory of a run named name in root, after removing the staging
// directories that runs no longer alive left there.
func NewStagedRunDir(root, name string, now time.Time) (*StagedRunDir, error) {
	name = SanitizeName(name)
	if err := os.MkdirAll(root, 0o755); err != nil {
		return nil, &atomicfile.Error{Op: "creating results root", Err: err}
	}
	CleanStale(root, now)
	tmp, err := os.MkdirTemp(root, stagePrefix+now.Format(TimestampLayout)+"_"+name+"-")
	if err != nil {
		return nil, &atomicfile.Error{Op: "creating run directory", Err: err}
	}
	lock := lockDir(tmp)                         // before anything else, so that a cleaner never sees this one unlocked for long
	if err := os.Chmod(tmp, 0o755); err != nil { // MkdirTemp makes it private; run directories are not
		closeLock(lock)
		os.Remove(tmp)
		return nil, &atomicfile.Error{Op: "creating run directory", Err: err}
	}
	return &StagedRunDir{Dir: tmp, root: root, name: name, now: now, lock: lock}, nil
}

// Commit moves the complete run to its final name and returns it. The name is reserved by NewRunDir's exclusive
// create, and the run renamed onto that empty directory, so concurrent runs still get distinct names. On
// failure the run is discarded.
func (s *StagedRunDir) Commit() (string, error) {
	defer closeLock(s.lock)
	dir, err := NewRunDir(s.root, s.name, s.now)
	if err != nil {
		s.Discard()
		return "", err
	}
	// syscall.Rename, not os.Rename: os.Rename refuses any existing directory as the target, while rename(2)
	// replaces an empty one, the reservation.
	if err := syscall.Rename(s.Dir, dir); err != nil {
		os.Remove(dir)
		s.Discard()
		return "", &atomicfile.Error{Op: "moving the finished run to", Path: dir, Err: err}
	}
	s.Dir = dir
	return dir, nil
}

// Discard removes the unfinished run.
func (s *StagedRunDir) Discard() {
	os.RemoveAll(s.Dir)
	closeLock(s.lock)
	s.lock = nil
}

// staleUnlocked is how old an unlocked staging directory must be before CleanStale removes it: a run creates its
// directory and locks it at once, so this only closes that instant; where no lock can be taken at all, a
// staging directory is taken for abandoned after staleUnlockable.
const (
	staleUnlocked   = 10 * time.Second
	staleUnlockable = 24 * time.Hour
)

// CleanStale removes the staging directories in root that no live run holds: those it can lock (their run has
// ended without removing them: killed, or its machine lost) once older than a few seconds, and, where locks are
// not available, those older than a day. It returns the directories removed; failures are left for the next run.
func CleanStale(root string, now time.Time) []string {
	entries, err := os.ReadDir(root)
	if err != nil {
		return nil
	}
	var removed []string
	for _, e := range entries {
		if !e.IsDir() || !strings.HasPrefix(e.Name(), stagePrefix) {
			continue
		}
		p := filepath.Join(root, e.Name())
		info, err := e.Info()
		if err != nil || now.Sub(info.ModTime()) < staleUnlocked {
			continue
		}
		held, lockable := tryLockDir(p)
		if !lockable && now.Sub(info.ModTime()) < staleUnlockable {
			continue
		}
		if held == nil && lockable {
			continue // a live run holds it
		}
		if os.RemoveAll(p) == nil {
			removed = append(removed, p)
		}
		closeLock(held)
	}
	return removed
}

func closeLock(c io.Closer) {
	if c != nil {
		c.Close()
	}
}

// LatestName is the name of the symlink in the results root that points at the most recent run.
const LatestName = "latest"

// UpdateLatest points <root>/latest at dir, replacing any previous link atomically: the new link is created under
// a temporary name and renamed over the old one, so readers never see a missing or half-made link. The link
// target is relative, so the results root can be moved or copied.
func UpdateLatest(root, dir string) error {
	latest := filepath.Join(root, LatestName)
	if fi, err := os.Lstat(latest); err == nil && fi.Mode()&fs.ModeSymlink == 0 {
		return fmt.Errorf("updating %s: it exists and is not a symlink; not replacing it", latest)
	}
	target, err := filepath.Rel(root, dir)
	if err != nil {
		return fmt.Errorf("updating %s: %w", latest, err)
	}
	pid := os.Getpid()
	for i := 0; i < maxRunDirSuffix; i++ {
		tmp := filepath.Join(root, fmt.Sprintf(".%s.tmp-%d-%d", LatestName, pid, i))
		err := os.Symlink(target, tmp)
		if errors.Is(err, fs.ErrExist) {
			continue // another goroutine of this process holds this temporary name
		}
		if err != nil {
			return fmt.Errorf("updating %s: %w", latest, err)
		}
		if err := os.Rename(tmp, latest); err != nil {
			os.Remove(tmp)
			return fmt.Errorf("updating %s: %w", latest, err)
		}
		return nil
	}
	return fmt.Errorf("updating %s: no free temporary name", latest)
}

// maxNameLen keeps run directory names well below file-system limits.
const maxNameLen = 80

// SanitizeName keeps [A-Za-z0-9._-], turns every other run of characters into one '_', trims separators from
// both ends and bounds the length. An empty result becomes "run".
func SanitizeName(name string) string {
	var b strings.Builder
	lastUnderscore := false
	for _, r := range name {
		ok := r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '-' || r == '_'
		if !ok {
			if !lastUnderscore {
				b.WriteByte('_')
				lastUnderscore = true
			}
			continue
		}
		b.WriteRune(r)
		lastUnderscore = r == '_'
	}
	s := strings.Trim(b.String(), "._-")
	if len(s) > maxNameLen {
		s = strings.TrimRight(s[:maxNameLen], "._-")
	}
	if s == "" || s == "latest" {
		return "run"
	}
	return s
}

// Stem is the file name without directory and without its extensions (.pickle, .json.gz, ...).
func Stem(path string) string {
	base := filepath.Base(path)
	for {
		ext := filepath.Ext(base)
		if ext == "" || ext == base || !isKnownExt(ext) {
			return base
		}
		base = strings.TrimSuffix(base, ext)
	}
}

func isKnownExt(ext string) bool {
	switch strings.ToLower(ext) {
	case ".pickle", ".pkl", ".pt", ".json", ".gz", ".log", ".txt", ".msgpack", ".html":
		return true
	}
	return false
}

// InputName is the short label of one input: iter1_rank0, step10_rank7, rank3, or the file stem.
func InputName(path string) string {
	info := input.ParsePath(path)
	var parts []string
	if info.Iteration >= 0 {
		parts = append(parts, info.IterationKind+strconv.Itoa(info.Iteration))
	}
	if info.Rank >= 0 {
		parts = append(parts, "rank"+strconv.Itoa(info.Rank))
	}
	if len(parts) == 0 {
		return SanitizeName(Stem(path))
	}
	return SanitizeName(strings.Join(parts, "_"))
}

// SummaryName is the file name of an input's rank summary in a folder of summaries: the input's base name,
// preceded by what its directories say about iteration and rank that the base name does not
// (iteration_2/rank0_memory_snapshot.pickle → iter2_rank0_memory_snapshot.pickle…), then a digest of the
// input's absolute path and ".summary.msgpack". The digest keeps inputs of one base name from different folders
// (two runs' iteration_2/rank0_memory_snapshot.pickle) from writing one summary over the other, while the same
// input summarized again (a retried job) replaces its own summary.
func SummaryName(path string) string {
	base := filepath.Base(path)
	full, own := input.ParsePath(path), input.ParsePath(base)
	var parts []string
	if full.Iteration >= 0 && own.Iteration != full.Iteration {
		parts = append(parts, full.IterationKind+strconv.Itoa(full.Iteration))
	}
	if full.Rank >= 0 && own.Rank != full.Rank {
		parts = append(parts, "rank"+strconv.Itoa(full.Rank))
	}
	parts = append(parts, base)
	h := fnv.New64a()
	h.Write([]byte(absPath(path)))
	return fmt.Sprintf("%s.%016x%s", SanitizeName(strings.Join(parts, "_")), h.Sum64(), SummarySuffix)
}

// SummaryRun names the run of a summarized input (merge.RankSummary.Run): input.RunOf of its absolute path,
// so that summaries written from different working directories name one dump alike.
func SummaryRun(path string) string { return input.RunOf(absPath(path)) }

// absPath is path made absolute, or as given when the working directory cannot be read.
func absPath(path string) string {
	if abs, err := filepath.Abs(path); err == nil {
		return abs
	}
	return path
}

// SummarySuffix ends the rank-summary files that analyze --summary-only writes and memscan merge reads.
const SummarySuffix = ".summary.msgpack"

// RunName derives a run name from the input paths: InputName for one input; for several inputs from the same
// layout a summary such as iter1_8ranks, iter1-5_rank0 or step10-20_4ranks; otherwise the common prefix of the
// file stems (or of nothing) followed by the number of inputs, e.g. snapshot_3inputs.
func RunName(paths []string) string {
	switch len(paths) {
	case 0:
		return "run"
	case 1:
		return InputName(paths[0])
	}
	kinds := map[string]bool{}
	iters := map[int]bool{}
	ranks := map[int]bool{}
	parsed := true
	for _, p := range paths {
		info := input.ParsePath(p)
		if info.Rank < 0 && info.Iteration < 0 {
			parsed = false
			break
		}
		kinds[info.IterationKind] = true
		iters[info.Iteration] = true
		ranks[info.Rank] = true
	}
	if parsed && len(kinds) == 1 {
		var parts []string
		var kind string
		for k := range kinds {
			kind = k
		}
		if !iters[-1] || len(iters) > 1 {
			parts = append(parts, kind+intSetLabel(iters))
		}
		if len(ranks) == 1 {
			if !ranks[-1] {
				parts = append(parts, "rank"+intSetLabel(ranks))
			}
		} else {
			parts = append(parts, strconv.Itoa(len(ranks))+"ranks")
		}
		if len(parts) > 0 {
			return SanitizeName(strings.Join(parts, "_"))
		}
	}
	prefix := Stem(paths[0])
	for _, p := range paths[1:] {
		prefix = commonPrefix(prefix, Stem(p))
	}
	if prefix = strings.Trim(prefix, "._- "); prefix != "" {
		prefix = strings.TrimRight(SanitizeName(prefix), "._-")
	}
	if len(prefix) < 3 {
		prefix = ""
	} else {
		prefix += "_"
	}
	return SanitizeName(prefix + strconv.Itoa(len(paths)) + "inputs")
}

// intSetLabel renders a set of numbers as "5" or "1-5" (min-max); -1 (unknown) is ignored.
func intSetLabel(set map[int]bool) string {
	var xs []int
	for x := range set {
		if x >= 0 {
			xs = append(xs, x)
		}
	}
	if len(xs) == 0 {
		return ""
	}
	sort.Ints(xs)
	if len(xs) == 1 {
		return strconv.Itoa(xs[0])
	}
	return strconv.Itoa(xs[0]) + "-" + strconv.Itoa(xs[len(xs)-1])
}

func commonPrefix(a, b string) string {
	n := min(len(a), len(b))
	for i := 0; i < n; i++ {
		if a[i] != b[i] {
			return a[:i]
		}
	}
	return a[:n]
}

// WriteRun writes one run directory: fill writes the files into a staging directory, which is renamed into
// place only when fill succeeds (a failure, such as a full disk, leaves no half-written run for latest or a reader
// to find) and then made latest. A latest that cannot be updated does not fail the run, which is complete: it is
// returned as latestErr, for a warning.
func WriteRun(root, name string, now time.Time, fill func(dir string) error) (dir string, latestErr, err error) {
	stage, err := NewStagedRunDir(root, name, now)
	if err != nil {
		return "", nil, err
	}
	if err := fill(stage.Dir); err != nil {
		stage.Discard()
		return "", nil, err
	}
	if dir, err = stage.Commit(); err != nil {
		return "", nil, err
	}
	return dir, UpdateLatest(root, dir), nil
}
