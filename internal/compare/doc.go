// Package compare diffs analyzed inputs against a baseline: totals, categories, sites, modules, the live set at
// the peak and, for snapshots, segments, in tables whose rows always add up to their total (a residual row holds
// what the rows do not cover).
//
// It imports analyze (the reports it compares) and snapshot (segment identities); results renders a Comparison
// as Markdown and plots draws its charts.
package compare
