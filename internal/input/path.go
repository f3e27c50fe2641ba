package input

import (
	"path"
	"regexp"
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
	info := PathInfo{Rank: -1, Iteration: -1}
	num := func(s string) int {
		n, err := strconv.Atoi(s)
		if err != nil || n > maxPathNumber {
			return -1
		}
		return n
	}
	parts := strings.Split(strings.ReplaceAll(p, `\`, "/"), "/")
	for i := len(parts) - 1; i >= 0; i-- {
		part := parts[i]
		if part == "" || part == "." || part == ".." {
			continue
		}
		if i == len(parts)-1 {
			part = strings.TrimSuffix(part, path.Ext(part))
			if m := pathRankStepRe.FindStringSubmatch(part); m != nil {
				info.Rank, info.Iteration, info.IterationKind = num(m[1]), num(m[2]), "step"
				continue
			}
		}
		if info.Rank < 0 {
			if m := pathRankRe.FindStringSubmatch(part); m != nil {
				info.Rank = num(m[1])
			} else if m := pathShortRankRe.FindStringSubmatch(part); m != nil {
				info.Rank = num(m[1])
			}
		}
		if info.Iteration < 0 {
			if m := pathIterRe.FindStringSubmatch(part); m != nil {
				if info.Iteration = num(m[2]); info.Iteration >= 0 {
					info.IterationKind = "iter"
					if strings.EqualFold(m[1], "step") {
						info.IterationKind = "step"
					}
				}
			}
		}
	}
	if info.Iteration < 0 {
		info.IterationKind = ""
	}
	return info
}

// RankFromPath returns the rank a path names (see ParsePath); ok is false when no component names a rank.
func RankFromPath(path string) (rank int, ok bool) {
	info := ParsePath(path)
	return info.Rank, info.Rank >= 0
}
