// Command memscan-gen writes realistic synthetic PyTorch CUDA allocator snapshots for benchmarks and tests.
//
// Usage:
//
//	memscan-gen [flags] -o FILE              one snapshot
//	memscan-gen [flags] --ranks N --dir DIR   a rank set: DIR/iteration_1/rankR_memory_snapshot.pickle
//
// Examples:
//
//	memscan-gen --size 200MB --stacks python -o big.pickle        # about 200 MB, memo-shared frame lists
//	memscan-gen --entries 1000000 --stacks all --unshared -o all.pickle
//	memscan-gen --ranks 16 --stages 4 --entries 20000 --dir ranks/  # four pipeline stages of different sizes
//	memscan-gen --training 5 --leak -o leak.pickle                  # a training loop that keeps every step's logits
//	memscan-gen --entries 4000000 --grow 0.1 -o grow4m.pickle        # a tenth of the allocations never freed
//	memscan-gen --summaries 100000 --per-dir 100 --dir sums/        # rank summaries to measure memscan merge on
//
// The snapshot comes from simulating a caching allocator, so traces, segments and blocks are consistent (see
// package internal/gen). The output is deterministic for a given --seed. --training writes a training loop
// instead (package internal/traingen): iterations with forward, backward and AdamW phases, Python-only stacks and
// optimizer annotations, optionally leaking (--leak) or changing shapes every step (--varlen).
package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"

	"github.com/spf13/pflag"

	"github.com/memscan/memscan/internal/export"
	"github.com/memscan/memscan/internal/gen"
	"github.com/memscan/memscan/internal/traingen"
	"github.com/memscan/memscan/internal/units"
)

func main() {
	if err := run(os.Args[1:], os.Stdout, os.Stderr); err != nil {
		fmt.Fprintf(os.Stderr, "memscan-gen: %v\n", err)
		os.Exit(1)
	}
}

func run(args []string, stdout, stderr io.Writer) error {
	fs := pflag.NewFlagSet("memscan-gen", pflag.ContinueOnError)
	fs.SetOutput(stderr)
	out := fs.StringP("out", "o", "", "output file (one snapshot)")
	size := fs.String("size", "", "target file size, e.g. 100MB or 2GB (overrides --entries)")
	entries := fs.Int("entries", 100000, "trace entries over all devices")
	devices := fs.Int("devices", 1, "devices")
	stacks := fs.String("stacks", "python", "stacks recorded: none, python or all")
	unshared := fs.Bool("unshared", false, "write every frame list fresh instead of sharing them through the memo")
	generation := fs.String("generation", "2.10", "torch generation of the keys: 2.0, 2.1, 2.2, 2.3, 2.5, 2.8, 2.10 or list")
	expandable := fs.Bool("expandable", false, "expandable segments")
	oom := fs.Bool("oom", false, "end device 0's trace with an OOM")
	grow := fs.Float64("grow", 0, "share of allocations never freed, so the live set keeps growing (a leak-like trace), e.g. 0.1")
	seed := fs.Int64("seed", 1, "random seed")
	ranks := fs.Int("ranks", 0, "write a rank set of this many snapshots (needs --dir)")
	stages := fs.Int("stages", 4, "pipeline stages of the rank set (earlier stages hold more memory)")
	dir := fs.String("dir", "", "output directory of the rank set")
	training := fs.Int("training", 0, "write a training loop of this many iterations instead (see --leak, --varlen)")
	leak := fs.Bool("leak", false, "training: keep every iteration's logits alive (a real leak)")
	varlen := fs.Bool("varlen", false, "training: change the sequence length every iteration (fragments the cache)")
	summaries := fs.Int("summaries", 0, "write this many synthetic rank summaries (memscan merge input) under --dir")
	perDir := fs.Int("per-dir", 100, "summaries: how many to a folder (one array task's ranks)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *summaries > 0 {
		if *dir == "" {
			return errors.New("--summaries needs --dir")
		}
		if err := writeSummaries(*dir, *summaries, *perDir, *stages, *seed); err != nil {
			return err
		}
		fmt.Fprintf(stderr, "wrote %d rank summaries under %s\n", *summaries, *dir)
		return nil
	}
	if *training > 0 {
		return writeTraining(*out, *training, *leak, *varlen, stdout)
	}
	if *grow < 0 || *grow >= 1 {
		return fmt.Errorf("--grow must be at least 0 and below 1, not %v", *grow)
	}
	cfg := gen.Config{
		Seed:       *seed,
		Generation: gen.Generation(*generation),
		Devices:    *devices,
		Entries:    *entries,
		Stacks:     gen.Stacks(*stacks),
		ShareStack: !*unshared,
		Expandable: *expandable,
		OOM:        *oom,
		Grow:       *grow,
	}
	switch cfg.Stacks {
	case gen.StacksNone, gen.StacksPython, gen.StacksAll:
	default:
		return fmt.Errorf("--stacks must be none, python or all, not %q", *stacks)
	}
	if !slices.Contains(gen.Generations(), cfg.Generation) {
		return fmt.Errorf("--generation %q is not one of 2.0, 2.1, 2.2, 2.3, 2.5, 2.8, 2.10, list", *generation)
	}
	if *size != "" {
		n, err := units.ParseBytes(*size)
		if err != nil {
			return fmt.Errorf("--size: %w", err)
		}
		cfg.TargetBytes = n
	}
	if *ranks > 0 {
		if *dir == "" {
			return errors.New("--ranks needs --dir")
		}
		files, err := gen.WriteRankSet(*dir, gen.RankSet{Ranks: *ranks, Stages: *stages, Base: cfg})
		if err != nil {
			return err
		}
		fmt.Fprintf(stderr, "wrote %d snapshots under %s\n", len(files), *dir)
		return nil
	}
	if *out == "" {
		return errors.New("give -o FILE or --ranks N --dir DIR")
	}
	var st gen.Stats
	if err := writeBuffered(*out, func(w io.Writer) (err error) { st, err = gen.Write(w, cfg); return err }); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "%s: %d bytes, %d segments, %d blocks, %d trace entries, reserved %d, allocated %d\n",
		*out, st.Bytes, st.Segments, st.Blocks, st.Entries, st.ReservedBytes, st.AllocatedBytes)
	return nil
}

// writeTraining records a synthetic training loop of n iterations (4 layers, 64 MiB of weights and 256 MiB of
// activations per layer, 512 MiB of logits) to path.
func writeTraining(path string, n int, leak, varlen bool, stdout io.Writer) error {
	if path == "" {
		return errors.New("--training needs -o FILE")
	}
	run := traingen.TrainingLoop{Iterations: n, Layers: 4, WeightBytes: 64 << 20, ActivationBytes: 256 << 20,
		LogitsBytes: 512 << 20, Keep: leak, Annotations: true}
	if varlen {
		for i := range n {
			run.Scale = append(run.Scale, []float64{1, 3, 2, 4}[i%4])
		}
	}
	s := run.Build()
	if err := writeBuffered(path, func(w io.Writer) error { return export.WritePickle(context.Background(), w, s) }); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "%s: training loop, %d iterations, %d trace entries\n", path, n, len(s.DeviceTraces[0]))
	return nil
}

// writeBuffered creates path and writes it through a 1 MiB buffer; errors name the path.
func writeBuffered(path string, write func(io.Writer) error) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	bw := bufio.NewWriterSize(f, 1<<20)
	err = write(bw)
	if err == nil {
		err = bw.Flush()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}
