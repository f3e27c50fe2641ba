package merge

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"strings"

	"github.com/vmihailenco/msgpack/v5"

	"github.com/memscan/memscan/internal/inputfile"
	"github.com/memscan/memscan/internal/msgpackcheck"
	"github.com/memscan/memscan/report"
)

// maxInputFile bounds a file memscan merge reads. Its values are read one at a time, and a report.msgpack one
// input at a time, so memory does not grow with the file: memscan's own report of 6,000 inputs passes 256 MiB,
// and the bound only keeps a merge from reading without end.
const maxInputFile = 1 << 36

// maxSummaryValue bounds the encoding of one rank summary: 64 categories and a path take a few KB.
const maxSummaryValue = 1 << 20

// maxMergedCategories bounds the categories of a cross-rank report read back (the rule sets have a few dozen).
const maxMergedCategories = 1 << 20

// runValue is what peekKind calls a run's report.msgpack, whose top-level map has no kind.
const runValue = "report.msgpack"

// WriteSummary encodes one rank summary as msgpack.
func WriteSummary(w io.Writer, s *RankSummary) error {
	enc := msgpack.NewEncoder(w)
	enc.SetSortMapKeys(true)
	if err := enc.Encode(s); err != nil {
		return fmt.Errorf("encoding rank summary: %w", err)
	}
	return nil
}

// ReadOptions tell how a file's values become rank summaries.
type ReadOptions struct {
	// RunOf names the run of an input of a report.msgpack from its path (see RankSummary.Run); nil leaves it "".
	RunOf func(path string) string
}

// Contents is what one file gives a merge, every value in it in order: a file may hold several summaries one
// after the other (cat *.summary.msgpack > all.msgpack), reports and cross-rank reports.
type Contents struct {
	// Summaries are the file's rank summaries and the inputs of its report.msgpack values, summarized.
	Summaries []*RankSummary
	// Merged are its cross-rank reports.
	Merged []*Merged
}

// Merged is a cross-rank report read as an input of a merge: its rows, as the summaries they came from less their
// categories, and its categories summed over those rows.
type Merged struct {
	Rows       []*RankSummary
	Categories []report.CategoryStat
}

// ReadFile reads every value of a summary file: rank summaries (memscan analyze --summary-only), cross-rank
// reports (memscan merge's cross_rank.msgpack, so that merges merge) and runs' report.msgpack, whose inputs are
// summarized. Every value is checked before it is decoded (msgpackcheck: complete, nested no deeper than memscan
// writes) and every summary is validated (RankSummary.Check); one bad value fails the whole file.
func ReadFile(path string, opts ReadOptions) (*Contents, error) {
	// OpenRegular, not os.Open: opening a FIFO without a writer blocks, before any check could run.
	f, fi, err := inputfile.OpenRegular(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if fi.Size() > maxInputFile {
		return nil, fmt.Errorf("%s: %d bytes is larger than the %d-byte limit of a merge input", path, fi.Size(), int64(maxInputFile))
	}
	if fi.Size() <= smallFile {
		// One read instead of one per pass over each value.
		data := make([]byte, fi.Size())
		if _, err := io.ReadFull(f, data); err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		return DecodeSummaries(path, data, opts)
	}
	return decodeValues(path, f, fi.Size(), opts)
}

// smallFile is the size up to which ReadFile reads a file whole: a rank summary, or a few thousand concatenated.
const smallFile = 1 << 20

// DecodeSummaries is ReadFile on data held in memory; name is used in errors.
func DecodeSummaries(name string, data []byte, opts ReadOptions) (*Contents, error) {
	return decodeValues(name, bytes.NewReader(data), int64(len(data)), opts)
}

// decodeValues reads the values of r (size bytes) one after the other.
func decodeValues(name string, r io.ReaderAt, size int64, opts ReadOptions) (*Contents, error) {
	c := &Contents{}
	for off := int64(0); ; {
		n, err := msgpackcheck.Value(io.NewSectionReader(r, off, size-off), off, msgpackcheck.MaxDepth)
		if err == io.EOF {
			if off == 0 {
				return nil, fmt.Errorf("%s: empty file; not a memscan summary", name)
			}
			return c, nil
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		// A summary's source names the value too when the file holds several.
		source := name
		if off > 0 {
			source = fmt.Sprintf("%s (byte %d)", name, off)
		}
		first := len(c.Summaries)
		if err := c.decodeValue(io.NewSectionReader(r, off, n), opts); err != nil {
			where := ""
			if off > 0 {
				where = fmt.Sprintf("the value at byte %d: ", off)
			}
			return nil, fmt.Errorf("%s: %s%w", name, where, err)
		}
		for _, s := range c.Summaries[first:] {
			s.Source = source
		}
		off += n
	}
}

// decodeValue decodes one checked value, by its kind.
func (c *Contents) decodeValue(v *io.SectionReader, opts ReadOptions) error {
	kind, err := peekKind(v)
	if err != nil {
		return err
	}
	switch kind {
	case SummaryKind:
		if v.Size() > maxSummaryValue {
			return fmt.Errorf("a rank summary of %d bytes; memscan writes them under %d", v.Size(), maxSummaryValue)
		}
		s, err := decodeSummary(v)
		if err != nil {
			return err
		}
		c.Summaries = append(c.Summaries, s)
	case CrossRankKind:
		m, err := decodeCrossRank(v)
		if err != nil {
			return err
		}
		c.Merged = append(c.Merged, m)
	case runValue:
		sums, err := decodeRun(v, opts)
		if err != nil {
			return err
		}
		c.Summaries = append(c.Summaries, sums...)
	default:
		return fmt.Errorf("unknown kind %q; not a memscan summary or report", kind)
	}
	return nil
}

// newDecoder decodes the value v from its start, through a buffer no larger than the value.
func newDecoder(v *io.SectionReader) *msgpack.Decoder {
	return msgpack.NewDecoder(bufio.NewReaderSize(io.NewSectionReader(v, 0, v.Size()), int(min(max(v.Size(), 16), 64<<10))))
}

// peekKind reads the keys of the value's top-level map until they say what it is: its kind, or runValue for a
// run's report (a tool or inputs key, and no kind).
func peekKind(v *io.SectionReader) (string, error) {
	dec := newDecoder(v)
	n, err := dec.DecodeMapLen()
	if err != nil || n < 0 {
		return "", errors.New("not a msgpack map: not a memscan summary or report")
	}
	for range n {
		key, err := dec.DecodeString()
		if err != nil {
			return "", fmt.Errorf("not a memscan summary or report: a key is not a string: %w", err)
		}
		switch key {
		case "kind":
			kind, err := dec.DecodeString()
			if err != nil {
				return "", fmt.Errorf("field kind: %w", err)
			}
			return kind, nil
		case "tool", "inputs":
			return runValue, nil
		}
		if err := dec.Skip(); err != nil {
			return "", err
		}
	}
	return "", errors.New("no kind: not a memscan summary or report")
}

// decodeSummary decodes and validates one rank summary.
func decodeSummary(v *io.SectionReader) (*RankSummary, error) {
	s := &RankSummary{Rank: missing, Iteration: missing, Stage: missing}
	if err := newDecoder(v).Decode(s); err != nil {
		return nil, fmt.Errorf("decoding rank summary: %w", err)
	}
	if err := s.Check(); err != nil {
		return nil, fmt.Errorf("rank summary: %w", err)
	}
	return s, nil
}

// decodeCrossRank reads a cross-rank report row by row, validating each as the summary it came from.
func decodeCrossRank(v *io.SectionReader) (*Merged, error) {
	m := &Merged{Rows: []*RankSummary{}, Categories: []report.CategoryStat{}}
	version := 0
	err := eachKey(newDecoder(v), func(dec *msgpack.Decoder, key string) (bool, error) {
		var err error
		switch key {
		case "version":
			version, err = dec.DecodeInt()
		case "rows":
			err = eachElement(dec, "rows", -1, func(i int) error {
				row := RankRow{Rank: missing, Iteration: missing, SummaryStage: missing}
				if err := dec.Decode(&row); err != nil {
					return err
				}
				s := row.summary()
				if err := s.Check(); err != nil {
					return err
				}
				if len(s.Source) > maxName {
					return fieldErrorf("source", "%d bytes is longer than a path (%d)", len(s.Source), maxName)
				}
				m.Rows = append(m.Rows, s)
				return nil
			})
		case "categories":
			err = eachElement(dec, "categories", maxMergedCategories, func(i int) error {
				var cs report.CategoryStat
				if err := dec.Decode(&cs); err != nil {
					return err
				}
				if err := checkCategory(i, cs.Name, cs.Bytes, int64(cs.Count), math.MaxInt64, math.MaxInt64); err != nil {
					return err
				}
				m.Categories = append(m.Categories, cs)
				return nil
			})
		default:
			return false, nil
		}
		return true, err
	})
	if err != nil {
		return nil, fmt.Errorf("cross-rank report: %w", err)
	}
	if version != CrossRankVersion {
		return nil, fmt.Errorf("cross-rank report version %d: this memscan merges version %d, whose rows keep every measure a merge sums; merge the summaries it came from", version, CrossRankVersion)
	}
	return m, nil
}

// eachKey reads the map dec is at, calling fn with each key; fn decodes the values it knows (true) and the
// others are skipped. Errors name the key.
func eachKey(dec *msgpack.Decoder, fn func(dec *msgpack.Decoder, key string) (bool, error)) error {
	n, err := dec.DecodeMapLen()
	if err != nil {
		return err
	}
	for range n {
		key, err := dec.DecodeString()
		if err != nil {
			return err
		}
		known, err := fn(dec, key)
		if err != nil {
			if strings.HasPrefix(err.Error(), key+"[") || strings.HasPrefix(err.Error(), "field "+key) {
				return err
			}
			return fmt.Errorf("field %s: %w", key, err)
		}
		if !known {
			if err := dec.Skip(); err != nil {
				return err
			}
		}
	}
	return nil
}

// eachElement reads the array that dec is at, calling fn for each element; limit (−1: none) bounds its length.
// Errors name field[i].
func eachElement(dec *msgpack.Decoder, field string, limit int, fn func(i int) error) error {
	n, err := dec.DecodeArrayLen()
	if err != nil {
		return fmt.Errorf("field %s: %w", field, err)
	}
	if limit >= 0 && n > limit {
		return fmt.Errorf("field %s: %d entries; at most %d", field, n, limit)
	}
	for i := range n {
		if err := fn(i); err != nil {
			return fmt.Errorf("%s[%d]: %w", field, i, err)
		}
	}
	return nil
}

// decodeRun summarizes the inputs of a run's report.msgpack one at a time, so that a report of thousands of
// inputs never sits in memory whole.
func decodeRun(v *io.SectionReader, opts ReadOptions) ([]*RankSummary, error) {
	var out []*RankSummary
	version, tool := 0, ""
	err := eachKey(newDecoder(v), func(dec *msgpack.Decoder, key string) (bool, error) {
		var err error
		switch key {
		case "version":
			version, err = dec.DecodeInt()
		case "tool":
			tool, err = dec.DecodeString()
		case "inputs":
			err = eachElement(dec, "inputs", -1, func(i int) error {
				var r report.Report
				if err := dec.Decode(&r); err != nil {
					return err
				}
				// A report memscan wrote names every input's file and format; an empty map is no input (and not
				// rank 0).
				if r.File == "" || r.Format == "" {
					return errors.New("not an analyzed input: it names no file or format")
				}
				run := ""
				if opts.RunOf != nil {
					run = opts.RunOf(r.File)
				}
				s := Summarize(&r, run)
				if err := s.Check(); err != nil {
					return fmt.Errorf("%s: %w", r.File, err)
				}
				out = append(out, s)
				return nil
			})
		default:
			return false, nil
		}
		return true, err
	})
	switch {
	case err != nil:
		return nil, fmt.Errorf("report: %w", err)
	case !strings.HasPrefix(tool, "memscan"):
		return nil, fmt.Errorf("report: field tool: %q is not a memscan report", tool)
	case version < 1 || version > report.ReportVersion:
		return nil, fmt.Errorf("report: field version: report version %d is not supported (this memscan reads 1 to %d)", version, report.ReportVersion)
	case len(out) == 0:
		return nil, errors.New("report: no analyzed inputs")
	}
	return out, nil
}
