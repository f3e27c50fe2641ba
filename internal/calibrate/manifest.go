package calibrate

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Manifest lists runs to evaluate together. Relative paths are relative to the manifest's directory.
type Manifest struct {
	Version int    `json:"version" yaml:"version"`
	Name    string `json:"name" yaml:"name"`
	// Source says where the measured figures come from (free text kept in the report).
	Source string    `json:"source,omitempty" yaml:"source"`
	Runs   []RunSpec `json:"runs" yaml:"runs"`
}

// decodeStrictJSON decodes data into v, rejecting unknown keys; errors read "<what> <path>: byte N: …" where the
// decoder tells an offset.
func decodeStrictJSON(what, path string, data []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	err := dec.Decode(v)
	if err == nil {
		return nil
	}
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	switch {
	case errors.As(err, &se):
		return fmt.Errorf("%s %s: byte %d: %w", what, path, se.Offset, err)
	case errors.As(err, &te):
		return fmt.Errorf("%s %s: byte %d: field %s: %w", what, path, te.Offset, te.Field, err)
	}
	return fmt.Errorf("%s %s: %w", what, path, err)
}

// LoadManifest reads a JSON or YAML manifest strictly: unknown keys, duplicate ids and runs without a config are
// errors naming the run.
func LoadManifest(path string) (*Manifest, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("manifest: %w", err)
	}
	var m Manifest
	trimmed := bytes.TrimSpace(data)
	if len(trimmed) > 0 && trimmed[0] == '{' {
		if err := decodeStrictJSON("manifest", path, data, &m); err != nil {
			return nil, err
		}
	} else {
		dec := yaml.NewDecoder(bytes.NewReader(data))
		dec.KnownFields(true)
		if err := dec.Decode(&m); err != nil {
			return nil, fmt.Errorf("manifest %s: %w", path, err)
		}
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
