package calibrate

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/memscan/memscan/internal/configfile"
)

// Manifest lists runs to evaluate together. Relative paths are relative to the manifest's directory.
type Manifest struct {
	Version int    `json:"version" yaml:"version"`
	Name    string `json:"name" yaml:"name"`
	// Source says where the measured figures come from (free text kept in the report).
	Source string    `json:"source,omitempty" yaml:"source"`
	Runs   []RunSpec `json:"runs" yaml:"runs"`
}

// fileLimits bound a manifest or corrections file as it is parsed.
var fileLimits = configfile.Limits{MaxBytes: 16 << 20, MaxDepth: 8, MaxItems: maxRuns, MaxValues: 1 << 20}

// maxRuns bounds the runs of a manifest (and the lists of a corrections file): each run is an estimate and
// possibly several runtime files.
const maxRuns = 10000

// LoadManifest reads a JSON or YAML manifest strictly (see package configfile): unknown keys, duplicate ids and
// runs without a config are errors naming the run.
func LoadManifest(path string) (*Manifest, error) {
	doc, err := configfile.ReadFile(path, "a calibration manifest", fileLimits)
	if err != nil {
		return nil, fmt.Errorf("manifest: %w", err)
	}
	var m Manifest
	if err := doc.Decode(&m); err != nil {
		return nil, fmt.Errorf("manifest: %w", err)
	}
	if m.Version != 1 {
		return nil, fmt.Errorf("manifest %s: version %d, want 1", path, m.Version)
	}
	if len(m.Runs) == 0 {
		return nil, fmt.Errorf("manifest %s: no runs", path)
	}
	if m.Name == "" {
		m.Name = strings.TrimSuffix(filepath.Base(path), filepath.Ext(path))
	}
	dir := filepath.Dir(path)
	seen := map[string]bool{}
	for i := range m.Runs {
		r := &m.Runs[i]
		if r.ID == "" {
			return nil, fmt.Errorf("manifest %s: runs[%d]: missing id", path, i)
		}
		if seen[r.ID] {
			return nil, fmt.Errorf("manifest %s: runs[%d]: duplicate id %q", path, i, r.ID)
		}
		seen[r.ID] = true
		if r.Config == "" {
			return nil, fmt.Errorf("manifest %s: run %q: missing config", path, r.ID)
		}
		if r.Measured.PeakAllocatedBytes < 0 || r.Measured.PeakReservedBytes < 0 || r.Measured.EndOfStepBytes < 0 {
			return nil, fmt.Errorf("manifest %s: run %q: measured bytes must not be negative", path, r.ID)
		}
		r.resolvePaths(dir)
	}
	return &m, nil
}
