package report

// The row limits every report and command starts from, in one place. Each keeps the value its command has
// always used; the flags named beside them override them per run.
const (
	// DefaultTopN is the number of largest allocations and creation sites reported per input (analyze --top).
	DefaultTopN = 50
	// DefaultTracerModuleRows caps the "modules that differ most across ranks" table of a tracer comparison;
	// analyze --top lowers it further.
	DefaultTracerModuleRows = 20
	// DefaultMergeRows is the number of per-rank rows memscan merge prints on stdout (merge --rows).
	DefaultMergeRows = 64
	// DefaultCompareRows is the number of rows per table in compare.md (compare --top).
	DefaultCompareRows = 25
)
