package findings

import (
	"fmt"

	"github.com/memscan/memscan/internal/units"
)

// Titles of the findings judged across inputs and ranks, on logs and on tracer files.
const (
	titleInputsImbalance      = "Memory imbalance between ranks"
	titleLeakAcrossIterations = "Allocated memory grows from iteration to iteration"
	titleMixedIterations      = "Summaries from several iterations are merged as if they were ranks"
	titleMixedRuns            = "Summaries from several runs are merged as if they were one"
	titleDuplicateRanks       = "Some ranks are given more than once"
	titleMissingRanks         = "Some ranks have no summary"
	titleStagesWithoutWorld   = "The pipeline stages assume no rank is missing at the end"
	titleRanksImbalance       = "Reserved memory is unbalanced across ranks"
	titlePipelineStageSkew    = "Early pipeline stages hold more memory"
	titleRankOOM              = "Some ranks ran out of memory"
	titleLogNearCapacity      = "Reserved memory is close to device capacity"
	titleLogReservedSlack     = "Reserved memory well above allocated"
	titleLogRankImbalance     = "Ranks use different amounts of memory"
	titleTracerUnlistedPeak   = "A large part of the peak is not listed"
	titleTracerUnknownModule  = "Most memory was created outside any module forward"
)

// NewInputsImbalance words the input that reserves most above the median of its iteration: file (with what its
// path says of rank and iteration, rankIter) reserves reserved, pct above median, the median of iteration (as
// "iteration N" or "the inputs"); outliers inputs are above OutlierPct.
func NewInputsImbalance(file, rankIter string, reserved int64, pct float64, median int64, iteration string, outliers int) Finding {
	return Finding{ID: RankImbalance, Severity: Warning, Title: titleInputsImbalance, Value: pct, Threshold: OutlierPct, Unit: Percent,
		Evidence: fmt.Sprintf("%s%s reserves %s, %.1f%% above the median %s of %s; %d outlier input(s)",
			file, rankIter, units.Bytes(reserved), pct, units.Bytes(median), iteration, outliers),
		Advice: "Uneven pipeline stages, MoE expert load or rank-0-only work (logging, checkpointing, evaluation) make one rank the limit: balance it or size the job for that rank."}
}

// NewLeakAcrossIterations words a rank whose allocated memory rose from first (iteration firstIter) to last
// (iteration lastIter) over snapshots snapshots without dropping.
func NewLeakAcrossIterations(rank int, first int64, firstIter int, last int64, lastIter, snapshots int) Finding {
	return Finding{ID: LeakAcrossIterations, Severity: Warning, Title: titleLeakAcrossIterations,
		Value: float64(last - first), Threshold: float64(LeakAcrossIterationsMinGrowthBytes), Unit: Bytes,
		Evidence: fmt.Sprintf("rank %d: allocated grew from %s (iteration %d) to %s (iteration %d) over %d snapshots without dropping",
			rank, units.Bytes(first), firstIter, units.Bytes(last), lastIter, snapshots),
		Advice: "Compare the sites of the first and last snapshot (memscan compare) to find what accumulates."}
}

// NewMixedIterations words summaries of several iterations merged as ranks; list renders the iterations and
// hint adds how to select summaries whose path names none.
func NewMixedIterations(summaries, iterations int, list, hint string) Finding {
	return Finding{ID: MixedIterations, Severity: Warning, Title: titleMixedIterations,
		Evidence: fmt.Sprintf("%d summaries come from %d iterations (%s)", summaries, iterations, list),
		Value:    float64(iterations), Threshold: MixedIterationsMax,
		Advice: "Ranks are compared within one training step: merge one iteration at a time " +
			"(memscan merge --iteration N DIR" + hint + "), and compare iterations with memscan compare."}
}

// NewMixedRuns words the ranks of one iteration coming from runs runs (RankSummary.Run), listed in list.
func NewMixedRuns(runs int, list string) Finding {
	return Finding{ID: MixedRuns, Severity: Warning, Title: titleMixedRuns,
		Evidence: fmt.Sprintf("the same ranks of one iteration come from %d runs: %s", runs, list),
		Value:    float64(runs), Threshold: MixedRunsMax,
		Advice: "Every statistic counts each rank once per run. Merge each run's summaries on their own " +
			"(summarize them into separate folders)."}
}

// NewDuplicateRanks words ranks ranks given by more than one summary of one run; first names the first of them
// and its files.
func NewDuplicateRanks(ranks int, first string) Finding {
	return Finding{ID: DuplicateRanks, Severity: Warning, Title: titleDuplicateRanks,
		Evidence: fmt.Sprintf("%d rank(s) are given by more than one summary, first %s", ranks, first),
		Value:    float64(ranks), Threshold: DuplicateRanksMin,
		Advice: "Each copy counts in every statistic. Remove the copies (the same snapshot summarized twice, a " +
			"summary copied, or a folder given twice); the report lists all of them."}
}

// NewMissingRanks words missing ranks of world without a summary (list names them); given says whether the
// world came from --world or from the highest rank.
func NewMissingRanks(missing, world int, list string, given bool) Finding {
	of := fmt.Sprintf("the %d ranks up to the highest one", world)
	if given {
		of = fmt.Sprintf("the world of %d ranks", world)
	}
	return Finding{ID: MissingRanks, Severity: Warning, Title: titleMissingRanks,
		Evidence: fmt.Sprintf("%d of %s have no summary: %s", missing, of, list),
		Value:    float64(missing), Threshold: MissingRanksMin,
		Advice: "The statistics cover only the ranks merged: summarize the missing ranks (their snapshots may have " +
			"failed to dump or to summarize) or check the file list."}
}

// NewStagesWithoutWorld words a world derived as the highest rank + 1 that stages stages do not divide.
func NewStagesWithoutWorld(world, stages int) Finding {
	return Finding{ID: StagesWithoutWorld, Severity: Warning, Title: titleStagesWithoutWorld,
		Evidence: fmt.Sprintf("without --world the world is the highest rank + 1, %d, which %d stages do not divide evenly", world, stages),
		Value:    float64(world % stages), Threshold: 0,
		Advice: "If the last ranks have no summary, every rank's stage is shifted: give the job's world size with --world."}
}

// NewRanksImbalance words the rank (named rank) that reserves max, pct above the median over ranks ranks.
func NewRanksImbalance(rank string, max int64, pct float64, median int64, ranks int) Finding {
	return Finding{ID: RankImbalance, Severity: Warning, Title: titleRanksImbalance,
		Evidence: fmt.Sprintf("%s reserves %s, %.0f%% above the median of %s over %d ranks", rank, units.Bytes(max), pct, units.Bytes(median), ranks),
		Value:    pct, Threshold: OutlierPct,
		Advice: "The largest rank decides whether the job fits. Check the pipeline split (layers per stage), " +
			"uneven data or sequence lengths, and rank-0-only work such as logging or evaluation."}
}

// NewPipelineStageSkew words the first pipeline stage's mean reserved per rank against the last's.
func NewPipelineStageSkew(firstStage int, first int64, lastStage int, last int64) Finding {
	ratio := float64(first) / float64(last)
	return Finding{ID: PipelineStageSkew, Severity: Info, Title: titlePipelineStageSkew,
		Evidence: fmt.Sprintf("stage %d averages %s per rank, stage %d %s (%.2f×)", firstStage, units.Bytes(first), lastStage, units.Bytes(last), ratio),
		Value:    ratio, Threshold: PipelineStageSkewRatio,
		Advice: "With 1F1B the first stage keeps the most micro-batches in flight. Give early stages fewer " +
			"layers, or use activation checkpointing on them."}
}

// NewRankOOM words ooms OOM events on oomRanks of ranks ranks.
func NewRankOOM(ooms, oomRanks, ranks int) Finding {
	return Finding{ID: RankOOM, Severity: Critical, Title: titleRankOOM,
		Evidence: fmt.Sprintf("%d OOM events on %d of %d ranks", ooms, oomRanks, ranks),
		Value:    float64(oomRanks), Threshold: RankOOMMin,
		Advice: "Analyze the snapshot of an OOM rank in full (memscan analyze FILE) to see what was live."}
}

// NewLogNearCapacity words a log's peak reserved at pct of the device's capacity.
func NewLogNearCapacity(peakReserved int64, pct float64, capacity int64) Finding {
	return Finding{ID: LogNearCapacity, Severity: Warning, Title: titleLogNearCapacity,
		Evidence: fmt.Sprintf("peak reserved %s is %.1f%% of %s", units.Bytes(peakReserved), pct, units.Bytes(capacity)),
		Value:    pct, Threshold: LogNearCapacityPct,
		Advice: "A small change in batch or sequence length may OOM; consider activation checkpointing or expandable segments."}
}

// NewLogReservedSlack words a log's cache, slackPct of its peak reserved.
func NewLogReservedSlack(peakReserved, peakAllocated int64, slackPct float64) Finding {
	return Finding{ID: LogReservedSlack, Severity: Info, Title: titleLogReservedSlack,
		Evidence: fmt.Sprintf("peak reserved %s vs peak allocated %s (%.1f%% of reserved is cache)", units.Bytes(peakReserved), units.Bytes(peakAllocated), slackPct),
		Value:    slackPct, Threshold: LogReservedSlackPct,
		Advice: "The caching allocator holds memory that is not in use; PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True usually reduces it."}
}

// NewLogRankImbalance words a log's largest rank reserving pct above the median.
func NewLogRankImbalance(pct float64) Finding {
	return Finding{ID: LogRankImbalance, Severity: Info, Title: titleLogRankImbalance,
		Evidence: fmt.Sprintf("max reserved is %.1f%% above the median over ranks", pct), Value: pct, Threshold: LogRankImbalancePct,
		Advice: "Pipeline stages hold different layers and in-flight micro-batches; balance layers across stages or size the GPU for the largest rank."}
}

// NewTracerUnlistedPeak words gap bytes of a tracer file's peak, pct of it, missing from the tensor list.
func NewTracerUnlistedPeak(gap, peak int64, pct float64) Finding {
	return Finding{ID: TracerUnlistedPeak, Severity: Info, Title: titleTracerUnlistedPeak,
		Evidence: fmt.Sprintf("%s of %s (%.1f%%) is not in the tensor list", units.Bytes(gap), units.Bytes(peak), pct),
		Value:    pct, Threshold: TracerUnlistedPeakPct,
		Advice: "The allocation that set the peak is excluded by the tracer; save with min_memory_mb=0 to list small tensors too, and look at the largest forward tensors (e.g. logits) as the likely trigger."}
}

// NewTracerUnknownModule words bytes of a tracer file's listed tensors, pct of them, created outside any module.
func NewTracerUnknownModule(bytes int64, pct float64) Finding {
	return Finding{ID: TracerUnknownModule, Severity: Info, Title: titleTracerUnknownModule,
		Evidence: fmt.Sprintf("%s (%.1f%% of listed) has module Unknown", units.Bytes(bytes), pct), Value: pct, Threshold: TracerUnknownModulePct,
		Advice: "Parameters, gradients and optimizer state are created outside forward hooks; see the phase and category views for their split."}
}
