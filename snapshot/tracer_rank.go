package snapshot

import (
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
)

// Rank markers in file and directory names: "rank3", "rank_3", "rank-3", "Rank3", and the short "_r3_" / "-r3."
// / "r3" forms. The short form needs a separator (or the name edge) on both sides so "iter3" or "r3d" do not match.
var (
	rankLongRe  = regexp.MustCompile(`(?i)rank[_-]?(\d+)`)
	rankShortRe = regexp.MustCompile(`(?i)(?:^|[_.\-])r(\d+)(?:[_.\-]|$)`)
)

// RankFromPath returns the rank a path names, looking at the file name first and then at the enclosing
// directories, nearest first. ok is false when no component names a rank.
func RankFromPath(path string) (rank int, ok bool) {
	p := filepath.ToSlash(path)
	parts := strings.Split(p, "/")
	for i := len(parts) - 1; i >= 0; i-- {
		part := parts[i]
		if part == "" || part == "." || part == ".." {
			continue
		}
		for _, re := range []*regexp.Regexp{rankLongRe, rankShortRe} {
			if m := re.FindStringSubmatch(part); m != nil {
				n, err := strconv.Atoi(m[1])
				if err == nil && n >= 0 && n < 1<<24 {
					return n, true
				}
			}
		}
	}
	return -1, false
}
