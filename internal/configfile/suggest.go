package configfile

import "strings"

// Suggest returns the candidate nearest to word when it is near enough to be a likely typo (the same letters in
// another case or with - for _, an edit distance of at most a third of the word's length and at least 1, or an
// abbreviation: the start of a candidate, at least 3 letters long), and "" otherwise.
func Suggest(word string, candidates []string) string {
	norm := func(s string) string { return strings.ReplaceAll(strings.ToLower(s), "-", "_") }
	best, bestDist := "", -1
	prefixOf := ""
	for _, c := range candidates {
		if norm(c) == norm(word) {
			return c
		}
		if len(word) >= 3 && strings.HasPrefix(norm(c), norm(word)) && (prefixOf == "" || len(c) < len(prefixOf)) {
			prefixOf = c
		}
		if d := editDistance(norm(word), norm(c)); bestDist < 0 || d < bestDist {
			best, bestDist = c, d
		}
	}
	if bestDist >= 0 && bestDist <= max(1, len([]rune(word))/3) {
		return best
	}
	return prefixOf
}

// editDistance is the optimal-string-alignment distance between a and b in runes: insertions, deletions,
// substitutions and swaps of neighbours (the commonest typo, "scael") each cost 1.
func editDistance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	d := make([][]int, len(ra)+1)
	for i := range d {
		d[i] = make([]int, len(rb)+1)
		d[i][0] = i
	}
	for j := range d[0] {
		d[0][j] = j
	}
	for i := 1; i <= len(ra); i++ {
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			d[i][j] = min(d[i-1][j]+1, d[i][j-1]+1, d[i-1][j-1]+cost)
			if i > 1 && j > 1 && ra[i-1] == rb[j-2] && ra[i-2] == rb[j-1] {
				d[i][j] = min(d[i][j], d[i-2][j-2]+1)
			}
		}
	}
	return d[len(ra)][len(rb)]
}
