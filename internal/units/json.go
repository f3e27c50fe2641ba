package units

import (
	"encoding/json"
	"io"
)

// WriteJSON writes v as two-space indented JSON followed by a newline, the layout of every JSON file and
// --format json output of memscan. HTML characters are not escaped: the files are read by people and scripts,
// never embedded in a page unquoted.
func WriteJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}
