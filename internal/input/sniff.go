package input

import (
	"bytes"
	"regexp"
)

// Kind is what the first bytes of an input say it is, before any decoder runs.
type Kind int

// The kinds Sniff tells apart.
const (
	KindUnknown         Kind = iota
	KindPickle               // a pickle of protocol 2 or later (PROTO opcode)
	KindGzip                 // a gzip stream; sniff again inside it
	KindMemscanOutput        // a file memscan wrote (JSON or msgpack)
	KindJSON                 // starts like JSON: '{' or '['; may still be a log whose lines start with '['
	KindText                 // plausibly UTF-8 text (a training log)
	KindOldPickle            // a pickle of protocol 0 or 1 (no PROTO opcode), which no snapshot is
	KindZip                  // a zip archive: torch.save's format since PyTorch 1.6, or any other
	KindLegacyTorchSave      // a pickle that starts with torch.save's magic number (its format before PyTorch 1.6)
)

// SniffLen is how many leading bytes Sniff wants to see.
const SniffLen = 512

// Sniff decides the kind of an input from its first bytes (up to SniffLen); the content decides, never the
// file name. head must not be empty.
func Sniff(head []byte) Kind {
	switch {
	case isLegacyTorchSave(head):
		return KindLegacyTorchSave
	case head[0] == 0x80:
		return KindPickle
	case bytes.HasPrefix(head, zipMagic):
		return KindZip
	case len(head) >= 2 && head[0] == 0x1f && head[1] == 0x8b:
		return KindGzip
	case isMemscanOutput(head):
		return KindMemscanOutput
	case oldPickleHead.Match(head):
		return KindOldPickle
	}
	switch firstNonSpace(head) {
	case '{', '[':
		return KindJSON
	}
	if looksLikeText(head) {
		return KindText
	}
	return KindUnknown
}

// zipMagic starts a zip archive's first local file header.
var zipMagic = []byte("PK\x03\x04")

// legacyTorchSaveMagic is torch.save's magic number 0x1950a86a20f9469cfc6c as the pickle LONG1 opcode writes it:
// the first value torch.save pickled before its zip format.
var legacyTorchSaveMagic = []byte("\x8a\x0a\x6c\xfc\x9c\x46\xf9\x20\x6a\xa8\x50\x19")

// isLegacyTorchSave says whether head is a pickle (PROTO, then FRAME from protocol 4) whose first value is
// torch.save's magic number.
func isLegacyTorchSave(head []byte) bool {
	if len(head) < 2 || head[0] != 0x80 {
		return false
	}
	rest := head[2:]
	if len(rest) > 0 && rest[0] == 0x95 && len(rest) >= 9 { // FRAME and its 8-byte length
		rest = rest[9:]
	}
	return bytes.HasPrefix(rest, legacyTorchSaveMagic)
}

// ZipFirstName returns the name of the first entry of a zip archive from its first bytes (the local file header:
// name length at byte 26, the name from byte 30), or "" when head does not hold it.
func ZipFirstName(head []byte) string {
	if len(head) < 30 || !bytes.HasPrefix(head, zipMagic) {
		return ""
	}
	n := int(head[26]) | int(head[27])<<8
	if len(head) < 30+n {
		return ""
	}
	return string(head[30 : 30+n])
}

func firstNonSpace(b []byte) byte {
	for _, c := range b {
		switch c {
		case ' ', '\t', '\r', '\n':
			continue
		case 0xEF, 0xBB, 0xBF: // UTF-8 byte order mark
			continue
		}
		return c
	}
	return 0
}

// looksLikeText reports whether the sniffed head is plausibly UTF-8 text (a training log).
func looksLikeText(b []byte) bool {
	for _, c := range b {
		if c == 0 || (c < 0x20 && c != '\n' && c != '\r' && c != '\t' && c != 0x1b) {
			return false
		}
	}
	return true
}

// memscanOutputJSON matches the start of the JSON files memscan writes: {"version": 1, "tool": "memscan …"} or
// {"kind": "memscan-…"}. No PyTorch dump starts like that (tracer files key by device, snapshots by "segments").
var memscanOutputJSON = regexp.MustCompile(`^\s*\{\s*"(?:version"\s*:\s*\d+\s*,\s*"tool"\s*:\s*"memscan|kind"\s*:\s*"memscan-)`)

// isMemscanOutput says whether head starts one of memscan's own output files (JSON, or msgpack: a map whose first
// entries name memscan), so that feeding one back gets a clear refusal instead of a parse error.
func isMemscanOutput(head []byte) bool {
	if memscanOutputJSON.Match(head) {
		return true
	}
	msgpackMap := (head[0] > 0x80 && head[0] <= 0x8f) || head[0] == 0xde || head[0] == 0xdf
	return msgpackMap && bytes.Contains(head[:min(len(head), 64)], []byte("memscan"))
}

// oldPickleHead matches how pickles of protocols 0 and 1 begin (they have no PROTO opcode): GLOBAL or INST with
// their module and name lines followed by an opcode ("cos\nsystem\n(" ...), a MARK followed by a quoted string,
// an int or a global (a tuple of arguments), a protocol-0 dict or list ("(dp0\n", "(lp0\n"), or a protocol-1
// empty dict or list followed by a memo store or a MARK. Logs and JSON do not start like that.
var oldPickleHead = regexp.MustCompile(`^(?:` +
	`[ci][A-Za-z_][\w.]*\n[A-Za-z_][\w.]*\n(?:[()\]}.]|p\d|q[\x00-\x1f\x7f-\xff]|S['"]|\z)` +
	`|\((?:S['"]|I-?\d|[ci][A-Za-z_][\w.]*\n)` +
	`|\([dl]p\d+\n` +
	`|[}\]](?:q[\x00-\xff]|r[\x00-\xff]{4})?\()`)
