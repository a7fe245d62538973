package billing

// Reading providers' JSON: what every adapter needs of a body before its own fields.

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// MaxEventIDLen bounds provider event ids; real ones are far shorter.
const MaxEventIDLen = 255

// ErrNotObject: the body is not one JSON object.
var ErrNotObject = errors.New("the body is not a JSON object")

// DecodeTop parses a webhook body into its top-level fields. It rejects anything that is
// not one JSON object.
func DecodeTop(body []byte) (map[string]json.RawMessage, error) {
	var top map[string]json.RawMessage
	if err := json.Unmarshal(body, &top); err != nil || top == nil {
		return nil, ErrNotObject
	}
	return top, nil
}

// Text returns a top-level field as text: a JSON string's value, or a number's literal;
// null, missing and other kinds give "".
func Text(raw json.RawMessage) string {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return ""
	}
	switch raw[0] {
	case '"':
		var s string
		if json.Unmarshal(raw, &s) == nil {
			return s
		}
	case '-', '0', '1', '2', '3', '4', '5', '6', '7', '8', '9':
		return string(raw)
	}
	return ""
}

// EventID reads an event's id field: a JSON string, not blank, at most MaxEventIDLen bytes,
// without control characters or U+FFFD. The body is stored with NUL and lone surrogates
// replaced by U+FFFD (StorableJSON), so an id holding one would be rewritten and could
// collide with another event's: it is refused instead, as no provider sends such an id.
// The errors name the field, for the 400 the provider's dashboard shows.
func EventID(top map[string]json.RawMessage, field string) (string, error) {
	raw, ok := top[field]
	if !ok {
		return "", fmt.Errorf("the event has no %q", field)
	}
	var id string
	if bytes.Equal(bytes.TrimSpace(raw), []byte("null")) || json.Unmarshal(raw, &id) != nil {
		return "", fmt.Errorf("the event's %q is not a JSON string", field)
	}
	return id, CheckEventID(field, id)
}

// CheckEventID holds an event id, read from field, to the rules EventID states: not blank,
// at most MaxEventIDLen bytes, without control characters or U+FFFD.
func CheckEventID(field, id string) error {
	switch {
	case strings.TrimSpace(id) == "":
		return fmt.Errorf("the event's %q is empty", field)
	case len(id) > MaxEventIDLen:
		return fmt.Errorf("the event's %q is longer than %d bytes", field, MaxEventIDLen)
	case strings.ContainsFunc(id, func(r rune) bool { return unicode.IsControl(r) || r == utf8.RuneError }):
		return fmt.Errorf("the event's %q holds a control character or an invalid one", field)
	}
	return nil
}

// ErrNotUTF8: a body that is not UTF-8 is not JSON.
var ErrNotUTF8 = errors.New("the body is not valid UTF-8, so it is not JSON")

// StorableJSON returns a JSON text that both engines store alike. Postgres jsonb refuses
// the escape \u0000 and escapes of lone UTF-16 surrogates (\ud800 without its partner),
// which are valid JSON: each becomes \ufffd, the replacement character, as Go's own decoder
// reads them anyway. Invalid UTF-8 is not JSON at all and is refused. body must be valid
// JSON otherwise; the result is the same text when nothing needed replacing.
func StorableJSON(body []byte) ([]byte, error) {
	if !utf8.Valid(body) {
		return nil, ErrNotUTF8
	}
	if !bytes.Contains(body, []byte(`\u`)) {
		return body, nil // the common case: no escape that could need replacing
	}
	out := make([]byte, 0, len(body))
	inString := false
	for i := 0; i < len(body); i++ {
		c := body[i]
		switch {
		case !inString:
			inString = c == '"'
			out = append(out, c)
		case c == '"':
			inString = false
			out = append(out, c)
		case c != '\\' || i+1 >= len(body):
			out = append(out, c)
		case body[i+1] != 'u':
			out = append(out, c, body[i+1]) // a two-character escape such as \" or \\
			i++
		default:
			r, ok := hex4(body, i+2)
			if !ok {
				out = append(out, c)
				continue
			}
			switch {
			case r == 0:
				out = append(out, `\ufffd`...)
			case r >= 0xd800 && r < 0xdc00: // a high surrogate must be followed by a low one
				if low, ok := escapedRune(body, i+6); ok && low >= 0xdc00 && low < 0xe000 {
					out = append(out, body[i:i+12]...)
					i += 6
				} else {
					out = append(out, `\ufffd`...)
				}
			case r >= 0xdc00 && r < 0xe000: // a low surrogate on its own
				out = append(out, `\ufffd`...)
			default:
				out = append(out, body[i:i+6]...)
			}
			i += 5
		}
	}
	return out, nil
}

// escapedRune reads a \uXXXX escape at body[i:].
func escapedRune(body []byte, i int) (rune, bool) {
	if i+1 >= len(body) || body[i] != '\\' || body[i+1] != 'u' {
		return 0, false
	}
	return hex4(body, i+2)
}

func hex4(body []byte, i int) (rune, bool) {
	if i+4 > len(body) {
		return 0, false
	}
	var r rune
	for _, c := range body[i : i+4] {
		var d byte
		switch {
		case c >= '0' && c <= '9':
			d = c - '0'
		case c >= 'a' && c <= 'f':
			d = c - 'a' + 10
		case c >= 'A' && c <= 'F':
			d = c - 'A' + 10
		default:
			return 0, false
		}
		r = r<<4 | rune(d)
	}
	return r, true
}

// DecodeEditable reads a JSON object to be edited and written again (a test event), its
// numbers kept as written.
func DecodeEditable(body []byte) (map[string]any, error) {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	var top map[string]any
	if err := dec.Decode(&top); err != nil {
		return nil, errors.New("the file is not a JSON object")
	}
	return top, nil
}
