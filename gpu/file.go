package gpu

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/memscan/memscan/units"
)

// LoadFile reads custom GPU specs (a JSON or YAML list of Spec objects), filling and checking each (Validate).
func LoadFile(path string) ([]Spec, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("gpu file: %w", err)
	}
	var specs []Spec
	if units.IsYAML(path, data) && !strings.HasPrefix(strings.TrimSpace(string(data)), "[") {
		var raw []map[string]any
		if err := yaml.Unmarshal(data, &raw); err != nil {
			return nil, fmt.Errorf("%s: invalid YAML: %w", path, err)
		}
		js, err := json.Marshal(raw)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		data = js
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&specs); err != nil {
		return nil, fmt.Errorf("%s: %w", path, units.JSONError(err))
	}
	for i := range specs {
		if err := specs[i].Validate(fmt.Sprintf("%s: [%d]", path, i)); err != nil {
			return nil, err
		}
	}
	return specs, nil
}
