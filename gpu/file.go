package gpu

import (
	"errors"
	"fmt"

	"github.com/memscan/memscan/internal/configfile"
)

// maxFileSpecs bounds the specs of one custom GPU file.
const maxFileSpecs = 1024

// fileLimits bound a custom GPU file as it is parsed.
var fileLimits = configfile.Limits{MaxBytes: 1 << 20, MaxDepth: 4, MaxItems: maxFileSpecs, MaxValues: 1 << 16}

// LoadFile reads custom GPU specs (a JSON or YAML list of Spec objects), strictly (see package configfile),
// filling and checking each (Validate).
func LoadFile(path string) ([]Spec, error) {
	doc, err := configfile.ReadFile(path, "a GPU file", fileLimits)
	if err != nil {
		return nil, err
	}
	var specs []Spec
	if err := doc.Decode(&specs); err != nil {
		return nil, err
	}
	for i := range specs {
		at := fmt.Sprintf("[%d]", i)
		if err := specs[i].Validate(at); err != nil {
			var fe *FieldError
			if errors.As(err, &fe) {
				return nil, doc.ErrorAt(at+"."+fe.Field, "%s", fe.Msg)
			}
			return nil, doc.ErrorAt(at, "%v", err)
		}
	}
	return specs, nil
}
