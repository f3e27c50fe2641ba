package load

import (
	"fmt"
	"strings"

	"github.com/memscan/memscan/internal/input"
	"github.com/memscan/memscan/tracer"
)

// The files people give memscan first that are not what it reads, each named for what it is, with what to give
// memscan instead: the PyTorch calls that write a snapshot or a memory timeline.

// recordSnapshot says how to write the input memscan reads best.
const recordSnapshot = `record a memory snapshot instead: torch.cuda.memory._record_memory_history(max_entries=100000) before the steps, torch.cuda.memory._dump_snapshot("snapshot.pickle") after them`

// readable lists what memscan reads, for content of no known kind.
const readable = `memscan reads torch.cuda.memory._dump_snapshot pickles (or their JSON), memory-tracer peak JSON, prof.export_memory_timeline JSON and training logs`

// chromeTraceKeys start a torch.profiler trace (Kineto's Chrome trace JSON: schemaVersion first, traceEvents
// holding the events) and no input memscan reads.
var chromeTraceKeys = map[string]bool{"traceEvents": true, "schemaVersion": true, "deviceProperties": true, "distributedInfo": true, "displayTimeUnit": true}

// chromeTraceError is a torch.profiler trace given as an input: its memory is in the profiler's memory timeline.
func chromeTraceError(name string) error {
	return &input.WrongInputError{File: name,
		What: "a torch.profiler trace (Chrome trace JSON: operator and kernel timings), not a memory snapshot",
		Do: `export the memory timeline from the same profiler, prof.export_memory_timeline("memory_timeline.json", device="cuda:0") ` +
			`with profile_memory=True, record_shapes=True and with_stack=True, and give memscan that file; or ` + recordSnapshot}
}

// zipError is a zip archive given as an input: torch.save's (its first entry is <archive>/data.pkl) or another.
func zipError(name string, head []byte) error {
	first := input.ZipFirstName(head)
	if strings.HasSuffix(first, "/data.pkl") || first == "data.pkl" {
		return &input.WrongInputError{File: name,
			What: "a torch.save file (a zip archive holding data.pkl: a checkpoint or saved tensors), not a memory snapshot", Do: recordSnapshot}
	}
	what := "a zip archive, not a snapshot, tracer file, memory timeline or log"
	if first != "" {
		what = fmt.Sprintf("a zip archive (first entry %q), not a snapshot, tracer file, memory timeline or log", first)
	}
	return &input.WrongInputError{File: name, What: what, Do: "unpack it and give memscan the files inside"}
}

// legacyTorchSaveError is a torch.save file of the format before PyTorch 1.6 (a pickle starting with its magic
// number).
func legacyTorchSaveError(name string) error {
	return &input.WrongInputError{File: name,
		What: "a torch.save file (the pickle format before PyTorch 1.6: a checkpoint or saved tensors), not a memory snapshot", Do: recordSnapshot}
}

// otherJSONError is JSON of no kind memscan reads, where what tells how it differs from each.
func otherJSONError(name, what string) error {
	return &input.WrongInputError{File: name, What: "JSON that is no input memscan reads: " + what, Do: readable}
}

// notTracerError rewords a tracer decoder's *tracer.NotTracerError, which says how the first key differs from a
// tracer file's, into what the content is not.
func notTracerError(name string, e *tracer.NotTracerError) error {
	return otherJSONError(name, e.Error()+` and a snapshot has "segments"`)
}
