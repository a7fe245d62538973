package billing

import (
	"bytes"
	"errors"
	"unicode/utf8"
)

var errNotUTF8 = errors.New("the body is not valid UTF-8, so it is not JSON")

// storableJSON returns a JSON text that both engines store alike. Postgres jsonb refuses
// the escape \u0000 and escapes of lone UTF-16 surrogates (\ud800 without its partner),
// which are valid JSON: each becomes \ufffd, the replacement character, as Go's own decoder
// reads them anyway. Invalid UTF-8 is not JSON at all and is refused. body must be valid
// JSON otherwise; the result is the same text when nothing needed replacing.
func storableJSON(body []byte) ([]byte, error) {
	if !utf8.Valid(body) {
		return nil, errNotUTF8
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
