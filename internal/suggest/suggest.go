// Package suggest finds the names a mistyped word was probably meant to be ("did you mean"), for commands, flags
// and settings alike, so that every such hint in memscan picks its candidates by the same rule.
//
// It is a leaf: it imports only the standard library.
package suggest

import "strings"

// maxSuggestions bounds how many equally close names a hint offers; more reads as a list, not a hint.
const maxSuggestions = 3

// Closest returns the candidates word was most likely meant to be, closest first (ties in the candidates'
// order), at most maxSuggestions, or nil when none is close enough. Letters compare without case and '-' and '_'
// alike (no_plots, NO-PLOTS and no-plots are one word), and a word that starts a single candidate ("summary" for
// "summary-only") suggests it. Otherwise a candidate is close when its edit distance (insertions, deletions,
// substitutions and swaps of neighbours) is within a third of the word's length, at least 1 and at most 3: a
// forgotten letter or a swap in a short word, a British spelling in a long one, never an unrelated name.
func Closest(word string, candidates []string) []string {
	w := fold(word)
	if w == "" {
		return nil
	}
	limit := maxDistance(w)
	var best []string
	bestDist := limit
	var prefixed []string
	for _, c := range candidates {
		fc := fold(c)
		if fc == w {
			return []string{c}
		}
		if len(w) >= 3 && strings.HasPrefix(fc, w) {
			prefixed = append(prefixed, c)
		}
		d := distance(w, fc)
		switch {
		case d > limit:
		case d < bestDist || best == nil:
			best, bestDist = []string{c}, d
		case d == bestDist:
			best = append(best, c)
		}
	}
	if len(best) == 0 && len(prefixed) == 1 {
		return prefixed
	}
	if len(best) > maxSuggestions {
		best = best[:maxSuggestions]
	}
	return best
}

// Hint words the suggestions for word among candidates as a clause to append to an error, e.g.
// `; did you mean "analyze"?`, with each suggestion written by quote; "" when none is close.
func Hint(word string, candidates []string, quote func(string) string) string {
	s := Closest(word, candidates)
	if len(s) == 0 {
		return ""
	}
	for i := range s {
		s[i] = quote(s[i])
	}
	if len(s) == 1 {
		return "; did you mean " + s[0] + "?"
	}
	return "; did you mean " + strings.Join(s[:len(s)-1], ", ") + " or " + s[len(s)-1] + "?"
}

// Quoted writes a suggestion in Go's double quotes, as memscan quotes the word it did not know.
func Quoted(s string) string { return `"` + s + `"` }

func maxDistance(w string) int { return min(max(len([]rune(w))/3, 1), 3) }

// fold is the form two names are compared in: lower case, '_' as '-'.
func fold(s string) string {
	return strings.ReplaceAll(strings.ToLower(strings.TrimSpace(s)), "_", "-")
}

// distance is the optimal-string-alignment distance of a and b: the Levenshtein distance with a swap of two
// neighbouring letters counted as one edit (the commonest typo).
func distance(a, b string) int {
	x, y := []rune(a), []rune(b)
	// Three rows of the dynamic programme: two back (for swaps), one back and the current one.
	prev2, prev, cur := make([]int, len(y)+1), make([]int, len(y)+1), make([]int, len(y)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(x); i++ {
		cur[0] = i
		for j := 1; j <= len(y); j++ {
			cost := 1
			if x[i-1] == y[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && x[i-1] == y[j-2] && x[i-2] == y[j-1] {
				cur[j] = min(cur[j], prev2[j-2]+1)
			}
		}
		prev2, prev, cur = prev, cur, prev2
	}
	return prev[len(y)]
}
