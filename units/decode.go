package units

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
)

// IsYAML decides whether a config file is YAML: by its extension, else by its content (JSON configs are
// objects, so anything not starting with '{' is read as YAML).
func IsYAML(path string, data []byte) bool {
	switch strings.ToLower(filepath.Ext(path)) {
	case ".yaml", ".yml":
		return true
	case ".json":
		return false
	}
	t := bytes.TrimSpace(data)
	return len(t) == 0 || t[0] != '{'
}

// JSONError words an encoding/json decode error of a config the same way everywhere: the byte offset of a
// syntax error, the field and offset of a type mismatch.
func JSONError(err error) error {
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	switch {
	case errors.As(err, &se):
		// SyntaxError.Offset counts the bytes read, including the offending one.
		return fmt.Errorf("invalid JSON at byte offset %d: %v", max(se.Offset-1, 0), se)
	case errors.As(err, &te):
		return fmt.Errorf("%s: expected %s, got JSON %s (byte offset %d)", te.Field, te.Type, te.Value, te.Offset)
	}
	return fmt.Errorf("invalid config: %w", err)
}
