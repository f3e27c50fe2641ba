package input

import (
	"cmp"
	"path"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// PathInfo is what an input path says about where the file came from. Every part of memscan that reads ranks or
// iterations from paths (tracer and timeline decoding, analysis, run-directory names, export) uses ParsePath, so
// they all agree.
type PathInfo struct {
	// Rank is the rank the path names, −1 when none.
	Rank int
	// Iteration is the iteration or training step the path names, −1 when none.
	Iteration int
	// IterationKind is how the path spelled it: "iter" for iteration_N / iterN, "step" for step_N and torchtitan's
	// step layout, "" when there is no iteration.
	IterationKind string
}

var (
	// torchtitan's newer layout file name: 000007_step_10.pickle → rank 7, step 10.
	pathRankStepRe = regexp.MustCompile(`^(\d+)_step_(\d+)\b`)
	// rank3, rank_3, Rank-7, but not the "rank" inside a word such as "crank9".
	pathRankRe = regexp.MustCompile(`(?i)(?:^|[^a-z])rank[_-]?(\d+)`)
	// The short form _r3_, -r3., r3: a separator (or the name edge) on both sides, so "iter3" or "r3d" do not match.
	pathShortRankRe = regexp.MustCompile(`(?i)(?:^|[_.-])r(\d+)(?:[_.-]|$)`)
	pathIterRe      = regexp.MustCompile(`(?i)(?:^|[^a-z])(iteration|iter|step)[_-]?(\d+)`)
)

// maxPathNumber bounds ranks and steps read from paths; a longer digit run is not a rank or step.
const maxPathNumber = 1 << 30

// ParsePath reads the rank and iteration from a path. It knows torchtitan's layouts
// (iteration_3/rank5_memory_snapshot.pickle, step_000000000010/000007_step_10.pickle and the *_exit variants) and
// the usual spellings rank3, rank_3, Rank-7, _r3_, iter3, step_3. The file name is searched first, then the
// directories from the innermost outward; the first match of each wins. Backslashes count as separators.
func ParsePath(p string) PathInfo {
	info, _, _ := parsePath(p)
	return info
}

// numberAt is where ParsePath read a number: the path component and the digits' byte range in it.
type numberAt struct{ part, from, to int }

// parsePath is ParsePath, also returning the path's components and where in them the rank and the iteration
// were read (RunOf blanks them out).
func parsePath(p string) (PathInfo, []string, []numberAt) {
	info := PathInfo{Rank: -1, Iteration: -1}
	var at []numberAt
	// num reads the digits m[g] of part i; a number too large to be a rank or step is none.
	num := func(i int, part string, m []int, g int) int {
		n, err := strconv.Atoi(part[m[2*g]:m[2*g+1]])
		if err != nil || n > maxPathNumber {
			return -1
		}
		at = append(at, numberAt{i, m[2*g], m[2*g+1]})
		return n
	}
	parts := strings.Split(strings.ReplaceAll(p, `\`, "/"), "/")
	for i := len(parts) - 1; i >= 0; i-- {
		part := parts[i]
		if part == "" || part == "." || part == ".." {
			continue
		}
		if i == len(parts)-1 {
			// The extension is cut, so indices into the name are indices into the component.
			name := strings.TrimSuffix(part, path.Ext(part))
			if m := pathRankStepRe.FindStringSubmatchIndex(name); m != nil {
				info.Rank, info.Iteration, info.IterationKind = num(i, name, m, 1), num(i, name, m, 2), "step"
				continue
			}
			part = name
		}
		if info.Rank < 0 {
			if m := pathRankRe.FindStringSubmatchIndex(part); m != nil {
				info.Rank = num(i, part, m, 1)
			} else if m := pathShortRankRe.FindStringSubmatchIndex(part); m != nil {
				info.Rank = num(i, part, m, 1)
			}
		}
		if info.Iteration < 0 {
			if m := pathIterRe.FindStringSubmatchIndex(part); m != nil {
				if info.Iteration = num(i, part, m, 2); info.Iteration >= 0 {
					info.IterationKind = "iter"
					if strings.EqualFold(part[m[2]:m[3]], "step") {
						info.IterationKind = "step"
					}
				}
			}
		}
	}
	if info.Iteration < 0 {
		info.IterationKind = ""
	}
	return info, parts, at
}

// RunOf names the run a path belongs to: the path with the rank and the iteration it names blanked out as "*"
// (dump/iteration_10/rank3_memory_snapshot.pickle → dump/iteration_*/rank*_memory_snapshot.pickle), so every
// rank and iteration of one dump shares it while another run's folder or file names differ. A directory that
// repeats the iteration (torchtitan's step_000000000010/000007_step_10.pickle) is blanked too. Paths are not
// made absolute here; callers that compare runs written from different working directories do that first.
func RunOf(p string) string {
	info, parts, at := parsePath(p)
	// Blank from the right within a component so earlier indices stay valid.
	slices.SortFunc(at, func(a, b numberAt) int { return cmp.Or(cmp.Compare(a.part, b.part), cmp.Compare(b.from, a.from)) })
	for _, a := range at {
		parts[a.part] = parts[a.part][:a.from] + "*" + parts[a.part][a.to:]
	}
	if info.Iteration >= 0 {
		for i, part := range parts[:len(parts)-1] {
			parts[i] = pathIterRe.ReplaceAllStringFunc(part, func(m string) string {
				sub := pathIterRe.FindStringSubmatchIndex(m)
				if n, err := strconv.Atoi(m[sub[4]:sub[5]]); err != nil || n != info.Iteration {
					return m
				}
				return m[:sub[4]] + "*" + m[sub[5]:]
			})
		}
	}
	return strings.Join(parts, "/")
}

// RankFromPath returns the rank a path names (see ParsePath); ok is false when no component names a rank.
func RankFromPath(path string) (rank int, ok bool) {
	info := ParsePath(path)
	return info.Rank, info.Rank >= 0
}
