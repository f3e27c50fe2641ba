package analyze

// Stage names a part of the analysis of one input, for a caller that shows progress (Options.Stage).
type Stage string

// The stages of one input, in the order they run; a tracer file, timeline or log has only StageDecode and
// StageRuntime.
const (
	StageDecode     Stage = "decoding"
	StageTotals     Stage = "totals"
	StageAllocator  Stage = "allocator replay"
	StageTrace      Stage = "trace replay"
	StageCategories Stage = "categories"
	StageRuntime    Stage = "analyzing"
)

// stage tells the caller that s starts; nil Options.Stage tells no one.
func (o Options) stage(s Stage) {
	if o.Stage != nil {
		o.Stage(s)
	}
}
