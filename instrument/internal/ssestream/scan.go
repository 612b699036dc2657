package ssestream

import (
	"encoding/binary"
	"math/bits"
)

// maxSkipDepth bounds the nesting depth of values the scanner skips over
// (values it does not interpret). Deeper input is reported as Malformed.
// The interpreted path (object → choices → choice → delta) adds at most four
// levels on top of it.
const maxSkipDepth = 256

// maxUsageValue saturates the usage counters so that absurd numbers cannot
// overflow int on 32-bit platforms.
const maxUsageValue = 1<<31 - 1

// Chunk describes one SSE `data:` payload of an OpenAI-compatible stream.
// Byte slices alias the input and are valid only during the Sink call
// (or, for ScanChunk, as long as the caller keeps the input unchanged).
type Chunk struct {
	Done      bool // payload is exactly [DONE] (after trimming spaces)
	Malformed bool // payload is not a well-formed JSON object (truncated, not JSON, not an object)
	Truncated bool // the line exceeded the parser's MaxLine; only its prefix was scanned
	Error     bool // payload object has a top-level non-null "error" member
	Tokens    int  // 1 when the chunk carries visible output, else 0
	HasUsage  bool // a "usage" object with at least one numeric member was present (not null)

	PromptTokens, CompletionTokens int // usage.prompt_tokens / usage.completion_tokens (0 if absent)

	Model        []byte // top-level "model" string value (raw bytes between quotes), nil if absent
	ID           []byte // top-level "id" string value (raw bytes between quotes), nil if absent
	FinishReason []byte // first non-empty choices[i].finish_reason string, nil if absent/null
}

// ScanChunk scans one data payload (the bytes after "data:" and the optional
// space). It never allocates and never panics.
//
// Fields are filled in document order while the payload is walked; when the
// payload turns out to be malformed (for example truncated), everything found
// before the point of failure is kept and Malformed is set. See the package
// documentation for the exact rules.
func ScanChunk(data []byte) Chunk {
	var c Chunk
	d := trimSpace(data)
	if len(d) == 6 && string(d) == "[DONE]" {
		c.Done = true
		return c
	}
	if !scanTop(d, &c) {
		c.Malformed = true
	}
	return c
}

func isSpace(c byte) bool {
	return c <= ' ' && (c == ' ' || c == '\t' || c == '\n' || c == '\r')
}

func trimSpace(d []byte) []byte {
	i, j := 0, len(d)
	for i < j && isSpace(d[i]) {
		i++
	}
	for j > i && isSpace(d[j-1]) {
		j--
	}
	return d[i:j]
}

// skipWS returns the index of the first non-whitespace byte at or after i
// (or len(d)).
func skipWS(d []byte, i int) int {
	for i < len(d) && isSpace(d[i]) {
		i++
	}
	return i
}

// skipString skips the string starting at d[i] == '"' and returns the index
// just past the closing quote. ok is false if the string is unterminated.
// A backslash escapes the byte after it; string contents (escape validity,
// control characters, UTF-8) are not validated.
//
// Strings are scanned 8 bytes at a time (SWAR): most keys and token strings
// are short, where this beats the call overhead of bytes.IndexByte.
func skipString(d []byte, i int) (int, bool) {
	j := i + 1
	for j+8 <= len(d) {
		w := binary.LittleEndian.Uint64(d[j:])
		m := hasByte(w, '"') | hasByte(w, '\\')
		if m == 0 {
			j += 8
			continue
		}
		// The lowest flagged byte is exact (false positives of the
		// zero-byte trick only occur above a true match).
		k := j + bits.TrailingZeros64(m)>>3
		if d[k] == '"' {
			return k + 1, true
		}
		j = k + 2 // skip the backslash and the byte it escapes
	}
	for j < len(d) {
		switch d[j] {
		case '"':
			return j + 1, true
		case '\\':
			j += 2
		default:
			j++
		}
	}
	return len(d), false
}

const (
	lsb = 0x0101010101010101
	msb = 0x8080808080808080
)

// hasByte returns a mask with the high bit set in (at least) the lowest byte
// of w equal to b, and only in bytes at or above it.
func hasByte(w uint64, b byte) uint64 {
	x := w ^ (lsb * uint64(b))
	return (x - lsb) &^ x & msb
}

// skipNumber skips a JSON number starting at d[i].
func skipNumber(d []byte, i int) (int, bool) {
	n := len(d)
	if i < n && d[i] == '-' {
		i++
	}
	if i >= n {
		return n, false
	}
	switch c := d[i]; {
	case c == '0':
		i++
	case c >= '1' && c <= '9':
		i++
		for i < n && d[i] >= '0' && d[i] <= '9' {
			i++
		}
	default:
		return i, false
	}
	if i < n && d[i] == '.' {
		i++
		s := i
		for i < n && d[i] >= '0' && d[i] <= '9' {
			i++
		}
		if i == s {
			return i, false
		}
	}
	if i < n && (d[i] == 'e' || d[i] == 'E') {
		i++
		if i < n && (d[i] == '+' || d[i] == '-') {
			i++
		}
		s := i
		for i < n && d[i] >= '0' && d[i] <= '9' {
			i++
		}
		if i == s {
			return i, false
		}
	}
	return i, true
}

// skipLiteral skips lit (true, false, null) at d[i].
func skipLiteral(d []byte, i int, lit string) (int, bool) {
	if len(d)-i >= len(lit) && string(d[i:i+len(lit)]) == lit {
		return i + len(lit), true
	}
	return i, false
}

// skipScalar skips a string, number or literal at d[i].
func skipScalar(d []byte, i int) (int, bool) {
	if i >= len(d) {
		return len(d), false
	}
	switch c := d[i]; c {
	case '"':
		return skipString(d, i)
	case 't':
		return skipLiteral(d, i, "true")
	case 'f':
		return skipLiteral(d, i, "false")
	case 'n':
		return skipLiteral(d, i, "null")
	default:
		if c == '-' || (c >= '0' && c <= '9') {
			return skipNumber(d, i)
		}
	}
	return i, false
}

// skipValue skips any JSON value starting at d[i] (no leading whitespace)
// and returns the index just past it.
func skipValue(d []byte, i int) (int, bool) {
	if i < len(d) && (d[i] == '{' || d[i] == '[') {
		return skipContainer(d, i)
	}
	return skipScalar(d, i)
}

// skipContainer validates and skips an object or array starting at d[i]
// without recursion. Nesting deeper than maxSkipDepth fails.
func skipContainer(d []byte, i int) (int, bool) {
	const (
		stValue = iota // expecting a value
		stKey          // expecting an object key
		stAfter        // a value just ended
	)
	var stack [maxSkipDepth / 64]uint64 // bit set: object, clear: array
	depth := 0
	n := len(d)
	st := stValue
	for {
		switch st {
		case stValue:
			if i >= n {
				return n, false
			}
			c := d[i]
			if c == '{' || c == '[' {
				if depth >= maxSkipDepth {
					return i, false
				}
				w, b := depth>>6, uint64(1)<<(depth&63)
				closer := byte(']')
				if c == '{' {
					stack[w] |= b
					closer = '}'
					st = stKey
				} else {
					stack[w] &^= b
					st = stValue
				}
				depth++
				i = skipWS(d, i+1)
				if i < n && d[i] == closer {
					depth--
					i++
					st = stAfter
				}
				continue
			}
			var ok bool
			if i, ok = skipScalar(d, i); !ok {
				return i, false
			}
			st = stAfter
		case stKey:
			if i >= n || d[i] != '"' {
				return i, false
			}
			var ok bool
			if i, ok = skipString(d, i); !ok {
				return i, false
			}
			i = skipWS(d, i)
			if i >= n || d[i] != ':' {
				return i, false
			}
			i = skipWS(d, i+1)
			st = stValue
		default: // stAfter
			if depth == 0 {
				return i, true
			}
			i = skipWS(d, i)
			if i >= n {
				return n, false
			}
			top := depth - 1
			isObj := stack[top>>6]&(uint64(1)<<(top&63)) != 0
			switch d[i] {
			case ',':
				i = skipWS(d, i+1)
				if isObj {
					st = stKey
				} else {
					st = stValue
				}
			case '}':
				if !isObj {
					return i, false
				}
				depth--
				i++
			case ']':
				if isObj {
					return i, false
				}
				depth--
				i++
			default:
				return i, false
			}
		}
	}
}

// objOpen consumes '{' at d[i] and following whitespace. empty reports an
// immediately closed object (i is then past the '}').
func objOpen(d []byte, i int) (j int, empty bool) {
	j = skipWS(d, i+1)
	if j < len(d) && d[j] == '}' {
		return j + 1, true
	}
	return j, false
}

// objNext consumes the separator after a member value: ',' (more is true,
// j is at the next key) or '}' (more is false, j is past it).
func objNext(d []byte, i int) (j int, more, ok bool) {
	i = skipWS(d, i)
	if i >= len(d) {
		return i, false, false
	}
	switch d[i] {
	case ',':
		return skipWS(d, i+1), true, true
	case '}':
		return i + 1, false, true
	}
	return i, false, false
}

// arrNext is objNext for arrays.
func arrNext(d []byte, i int) (j int, more, ok bool) {
	i = skipWS(d, i)
	if i >= len(d) {
		return i, false, false
	}
	switch d[i] {
	case ',':
		return skipWS(d, i+1), true, true
	case ']':
		return i + 1, false, true
	}
	return i, false, false
}

// scanKey reads the key at d[i] and the following colon. It returns the key
// bytes (raw, without quotes) and the index of the value (whitespace
// skipped).
func scanKey(d []byte, i int) (key []byte, j int, ok bool) {
	if i >= len(d) || d[i] != '"' {
		return nil, i, false
	}
	e, ok := skipString(d, i)
	if !ok {
		return nil, e, false
	}
	key = d[i+1 : e-1]
	j = skipWS(d, e)
	if j >= len(d) || d[j] != ':' {
		return nil, j, false
	}
	return key, skipWS(d, j+1), true
}

// nonEmptyString reports whether d[i] starts a string with at least one byte
// of content. It looks only at the opening bytes, so an unterminated
// (truncated) string with content also counts.
func nonEmptyString(d []byte, i int) bool {
	return i+1 < len(d) && d[i] == '"' && d[i+1] != '"'
}

// stringValue skips the value at d[i]; if it is a string, s holds its raw
// content.
func stringValue(d []byte, i int) (s []byte, j int, ok bool) {
	if i < len(d) && d[i] == '"' {
		j, ok = skipString(d, i)
		if ok {
			s = d[i+1 : j-1]
		}
		return s, j, ok
	}
	j, ok = skipValue(d, i)
	return nil, j, ok
}

// scanTop walks the top-level object d (already trimmed). It returns false
// if d is not exactly one well-formed JSON object.
func scanTop(d []byte, c *Chunk) bool {
	if len(d) == 0 || d[0] != '{' {
		return false
	}
	i, empty := objOpen(d, 0)
	if empty {
		return i == len(d)
	}
	for {
		key, j, ok := scanKey(d, i)
		if !ok {
			return false
		}
		i = j
		switch string(key) {
		case "id":
			var s []byte
			if s, i, ok = stringValue(d, i); s != nil {
				c.ID = s
			}
		case "model":
			var s []byte
			if s, i, ok = stringValue(d, i); s != nil {
				c.Model = s
			}
		case "choices":
			i, ok = scanChoices(d, i, c)
		case "usage":
			i, ok = scanUsage(d, i, c)
		case "error":
			if i < len(d) && d[i] != 'n' {
				c.Error = true
			}
			i, ok = skipValue(d, i)
		default:
			i, ok = skipValue(d, i)
		}
		if !ok {
			return false
		}
		var more bool
		if i, more, ok = objNext(d, i); !ok {
			return false
		}
		if !more {
			return i == len(d)
		}
	}
}

// scanChoices walks the value of "choices".
func scanChoices(d []byte, i int, c *Chunk) (int, bool) {
	if i >= len(d) || d[i] != '[' {
		return skipValue(d, i)
	}
	i = skipWS(d, i+1)
	if i < len(d) && d[i] == ']' {
		return i + 1, true
	}
	for {
		var ok bool
		if i < len(d) && d[i] == '{' {
			i, ok = scanChoice(d, i, c)
		} else {
			i, ok = skipValue(d, i)
		}
		if !ok {
			return i, false
		}
		var more bool
		if i, more, ok = arrNext(d, i); !ok || !more {
			return i, ok
		}
	}
}

// scanChoice walks one choices[i] object at d[i] == '{'.
func scanChoice(d []byte, i int, c *Chunk) (int, bool) {
	i, empty := objOpen(d, i)
	if empty {
		return i, true
	}
	for {
		key, j, ok := scanKey(d, i)
		if !ok {
			return j, false
		}
		i = j
		switch string(key) {
		case "delta", "message":
			if i < len(d) && d[i] == '{' {
				i, ok = scanDelta(d, i, c)
			} else {
				i, ok = skipValue(d, i)
			}
		case "text":
			if nonEmptyString(d, i) {
				c.Tokens = 1
			}
			i, ok = skipValue(d, i)
		case "finish_reason":
			var s []byte
			if s, i, ok = stringValue(d, i); len(s) > 0 && c.FinishReason == nil {
				c.FinishReason = s
			}
		default:
			i, ok = skipValue(d, i)
		}
		if !ok {
			return i, false
		}
		var more bool
		if i, more, ok = objNext(d, i); !ok || !more {
			return i, ok
		}
	}
}

// scanDelta walks a choices[i].delta or choices[i].message object at
// d[i] == '{'.
func scanDelta(d []byte, i int, c *Chunk) (int, bool) {
	i, empty := objOpen(d, i)
	if empty {
		return i, true
	}
	for {
		key, j, ok := scanKey(d, i)
		if !ok {
			return j, false
		}
		i = j
		switch string(key) {
		case "content", "reasoning_content", "reasoning", "refusal":
			if nonEmptyString(d, i) {
				c.Tokens = 1
			}
		case "tool_calls":
			if i < len(d) && d[i] == '[' {
				if k := skipWS(d, i+1); k < len(d) && d[k] != ']' {
					c.Tokens = 1
				}
			}
		}
		if i, ok = skipValue(d, i); !ok {
			return i, false
		}
		var more bool
		if i, more, ok = objNext(d, i); !ok || !more {
			return i, ok
		}
	}
}

// scanUsage walks the value of "usage".
func scanUsage(d []byte, i int, c *Chunk) (int, bool) {
	if i >= len(d) || d[i] != '{' {
		return skipValue(d, i)
	}
	i, empty := objOpen(d, i)
	if empty {
		return i, true
	}
	for {
		key, j, ok := scanKey(d, i)
		if !ok {
			return j, false
		}
		i = j
		if i < len(d) && (d[i] == '-' || (d[i] >= '0' && d[i] <= '9')) {
			start := i
			if i, ok = skipNumber(d, i); !ok || i >= len(d) {
				// A number running into the end of input may be cut
				// short: do not report it.
				return i, false
			}
			c.HasUsage = true
			switch string(key) {
			case "prompt_tokens":
				c.PromptTokens = intPart(d[start:i])
			case "completion_tokens":
				c.CompletionTokens = intPart(d[start:i])
			}
		} else if i, ok = skipValue(d, i); !ok {
			return i, false
		}
		var more bool
		if i, more, ok = objNext(d, i); !ok || !more {
			return i, ok
		}
	}
}

// intPart returns the integer part of a validated JSON number, 0 for
// negative numbers, saturating at maxUsageValue.
func intPart(num []byte) int {
	v := 0
	for _, ch := range num {
		if ch < '0' || ch > '9' {
			if ch == '-' {
				return 0
			}
			break
		}
		v = v*10 + int(ch-'0')
		if v > maxUsageValue {
			return maxUsageValue
		}
	}
	return v
}
