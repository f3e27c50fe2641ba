// Package merge joins per-rank summaries into one cross-rank report: compact RankSummary files written where
// each rank's snapshot lives (memscan analyze --summary-only), merged with bounded memory whatever the rank
// count (min, exact median and p90, max per measure, pipeline stages, outliers, the largest categories, advice).
//
// It imports analyze (for the report it summarizes and the shared category and recommendation types); results
// renders its CrossRank, and the CLI reads and writes its files.
package merge
