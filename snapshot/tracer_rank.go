package snapshot

// RankFromPath returns the rank a path names (see ParsePath); ok is false when no component names a rank.
func RankFromPath(path string) (rank int, ok bool) {
	info := ParsePath(path)
	return info.Rank, info.Rank >= 0
}
