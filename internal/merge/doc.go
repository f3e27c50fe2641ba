// Package merge joins per-rank summaries into one cross-rank report: compact RankSummary files written where
// each rank's snapshot lives (memscan analyze --summary-only), merged with bounded memory whatever the rank
// count (min, exact median, p90 and p99 per measure, pipeline stages, outliers against their own stage, the rank
// set checked for missing and repeated ranks and for a second run, the largest categories, advice). A cross-rank
// report keeps every rank's row, so reports merge again: per node, then once for the job.
//
// It reads and validates summary files itself (summary_io.go, validate.go) and needs only the report model:
// results renders its CrossRank, and the CLI finds the files and names the runs (input.RunOf).
package merge
