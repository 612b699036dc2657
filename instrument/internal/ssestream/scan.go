package ssestream

import (
	"encoding/binary"
	"math/bits"
)

// maxDepth bounds the nesting depth of the payload (the top-level object
// counts as 1). Deeper input is reported as Malformed.
const maxDepth = 256

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

// SWAR constants: one bit per byte.
const (
	lsb = 0x0101010101010101
	msb = 0x8080808080808080
)

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

// Contexts: what the innermost open container is.
const (
	cSkip    uint8 = iota // not interpreted
	cTop                  // the payload object
	cChoices              // the top-level "choices" array
	cChoice               // an object element of "choices"
	cDelta                // choices[i].delta or choices[i].message
	cUsage                // the top-level "usage" object
)

// Keys: the meaning of the member whose value comes next.
const (
	kNone uint8 = iota
	kID
	kModel
	kChoices
	kUsage
	kError
	kDelta     // delta or message
	kText      // choices[i].text
	kFinish    // choices[i].finish_reason
	kContent   // content, reasoning_content, reasoning, refusal
	kToolCalls // tool_calls
	kPrompt    // usage.prompt_tokens
	kCompletion
)

// keyFor maps a key name to its meaning in context ctx.
func keyFor(ctx, name uint8) uint8 {
	switch ctx {
	case cTop:
		switch name {
		case nID:
			return kID
		case nModel:
			return kModel
		case nChoices:
			return kChoices
		case nUsage:
			return kUsage
		case nError:
			return kError
		}
	case cChoice:
		switch name {
		case nDelta, nMessage:
			return kDelta
		case nText:
			return kText
		case nFinishReason:
			return kFinish
		}
	case cDelta:
		switch name {
		case nContent, nReasoningContent, nReasoning, nRefusal:
			return kContent
		case nToolCalls:
			return kToolCalls
		}
	case cUsage:
		switch name {
		case nPromptTokens:
			return kPrompt
		case nCompletionTokens:
			return kCompletion
		}
	}
	return kNone
}

// afterKey consumes the colon (and surrounding whitespace) after a key
// whose closing quote is at d[i-1]; it returns the index of the value.
func afterKey(d []byte, i int) (int, bool) {
	n := len(d)
	if i < n && d[i] == ':' { // compact JSON fast path
		i++
	} else {
		for i < n && isSpace(d[i]) {
			i++
		}
		if i >= n || d[i] != ':' {
			return i, false
		}
		i++
	}
	for i < n && isSpace(d[i]) {
		i++
	}
	return i, true
}

// Walker states.
const (
	stKey   = iota // expecting a member key (at a non-space byte)
	stValue        // expecting a value (at a non-space byte)
	stStr          // scanning a string (entered only by fallthrough)
	stAfter        // a value just ended
)

// scanTop walks d (already trimmed), filling c. It returns false if d is not
// exactly one well-formed JSON object. It is a single iterative loop (no
// recursion, no calls per token on the common path): the nesting is tracked
// with a bit stack (object or array) bounded by maxDepth, and the context of
// the first four levels, which is all the interpreted paths need.
func scanTop(d []byte, c *Chunk) bool {
	n := len(d)
	if n == 0 || d[0] != '{' {
		return false
	}
	var isObj [maxDepth / 64]uint64
	var ctxs [4]uint8 // context per level while depth <= 4
	isObj[0] = 1
	ctxs[0] = cTop
	depth := 1
	obj := true // innermost container is an object
	ctx, key := cTop, kNone
	i := 1
	for i < n && isSpace(d[i]) {
		i++
	}
	st := stKey
	if i < n && d[i] == '}' {
		i++
		depth = 0
		st = stAfter
	}
	for {
		switch st {
		case stKey:
			if i >= n || d[i] != '"' {
				return false
			}
			// Fast path: recognise common keys by comparing whole words
			// with constants. The key length is then a constant on a
			// (well predicted) branch rather than the result of a search
			// for the closing quote, which shortens the dependency chain
			// from one token to the next. l is the key length including
			// the closing quote; 0 means not recognised (slow path).
			name, l := nOther, 0
			if s := i + 1; n-s >= 16 {
				w0 := binary.LittleEndian.Uint64(d[s:])
				w1 := binary.LittleEndian.Uint64(d[s+8:])
				switch byte(w0) {
				case 'c':
					switch w0 {
					case kwChoices0:
						name, l = nChoices, 8
					case kwContent0:
						name, l = nContent, 8
					case kwCreated0:
						l = 8
					case kwCompletionTokens0:
						if w1 == kwCompletionTokens1 && n-s >= 24 &&
							binary.LittleEndian.Uint64(d[s+16:])&low2 == kwCompletionTokens2 {
							name, l = nCompletionTokens, 18
						}
					}
				case 'd':
					if w0&low6 == kwDelta0 {
						name, l = nDelta, 6
					}
				case 'e':
					if w0&low6 == kwError0 {
						name, l = nError, 6
					}
				case 'f':
					if w0 == kwFinishReason0 && w1&low6 == kwFinishReason1 {
						name, l = nFinishReason, 14
					}
				case 'i':
					if w0&low3 == kwID0 {
						name, l = nID, 3
					} else if w0&low6 == kwIndex0 {
						l = 6
					}
				case 'l':
					if w0 == kwLogprobs0 && w1&low1 == kwLogprobs1 {
						l = 9
					}
				case 'm':
					if w0&low6 == kwModel0 {
						name, l = nModel, 6
					} else if w0 == kwMessage0 {
						name, l = nMessage, 8
					}
				case 'o':
					if w0&low7 == kwObject0 {
						l = 7
					}
				case 'p':
					if w0 == kwPromptTokens0 && w1&low6 == kwPromptTokens1 {
						name, l = nPromptTokens, 14
					}
				case 'r':
					if w0&low5 == kwRole0 {
						l = 5
					} else if w0 == kwRefusal0 {
						name, l = nRefusal, 8
					} else if w0 == kwReasoning0 {
						if w1&low2 == kwReasoning1 {
							name, l = nReasoning, 10
						} else if w1 == kwReasoningContent1 && n-s >= 24 &&
							binary.LittleEndian.Uint64(d[s+16:])&low2 == kwReasoningContent2 {
							name, l = nReasoningContent, 18
						}
					}
				case 's':
					if w0 == kwStopReason0 && w1&low4 == kwStopReason1 {
						l = 12
					} else if w0 == kwSystemFingerprint0 && w1 == kwSystemFingerprint1 && n-s >= 24 &&
						binary.LittleEndian.Uint64(d[s+16:])&low3 == kwSystemFingerprint2 {
						l = 19
					}
				case 't':
					if w0&low5 == kwText0 {
						name, l = nText, 5
					} else if w0 == kwToolCalls0 && w1&low3 == kwToolCalls1 {
						name, l = nToolCalls, 11
					} else if w0 == kwTotalTokens0 && w1&low5 == kwTotalTokens1 {
						l = 13
					}
				case 'u':
					if w0&low6 == kwUsage0 {
						name, l = nUsage, 6
					}
				}
			}
			if l > 0 {
				key = kNone
				if ctx != cSkip {
					key = keyFor(ctx, name)
				}
				i += 1 + l
				if i < n && d[i] == ':' {
					i++
				} else {
					for i < n && isSpace(d[i]) {
						i++
					}
					if i >= n || d[i] != ':' {
						return false
					}
					i++
				}
				for i < n && isSpace(d[i]) {
					i++
				}
				st = stValue // falls through to read the value
			}
			// Slow path: st is still stKey, d[i] == '"', so stValue falls
			// through to stStr, which scans and classifies the key.
			fallthrough
		case stValue:
			if i >= n {
				return false
			}
			if ch := d[i]; ch != '"' {
				switch ch {
				case '{', '[':
					if depth >= maxDepth {
						return false
					}
					if key == kError {
						c.Error = true
					}
					nc := cSkip
					closer := byte(']')
					w, bit := depth>>6, uint64(1)<<(depth&63)
					if ch == '{' {
						if ctx == cChoices {
							nc = cChoice
						} else if key == kDelta {
							nc = cDelta
						} else if key == kUsage {
							nc = cUsage
						}
						isObj[w] |= bit
						closer = '}'
						obj = true
						st = stKey
					} else {
						if key == kChoices {
							nc = cChoices
						} else if key == kToolCalls {
							j := i + 1
							for j < n && isSpace(d[j]) {
								j++
							}
							if j < n && d[j] != ']' {
								c.Tokens = 1
							}
						}
						isObj[w] &^= bit
						obj = false
						st = stValue
					}
					if depth < len(ctxs) {
						ctxs[depth] = nc
					}
					depth++
					ctx, key = nc, kNone
					i++
					for i < n && isSpace(d[i]) {
						i++
					}
					if i < n && d[i] == closer {
						i++
						depth--
						ctx = ctxAt(&ctxs, depth)
						obj = parentIsObj(&isObj, depth)
						st = stAfter
					}
					continue
				case 't':
					if n-i < 4 || string(d[i:i+4]) != "true" {
						return false
					}
					i += 4
				case 'f':
					if n-i < 5 || string(d[i:i+5]) != "false" {
						return false
					}
					i += 5
				case 'n':
					if n-i < 4 || string(d[i:i+4]) != "null" {
						return false
					}
					i += 4
					key = kNone // null is never an error
				default:
					start := i
					if ch >= '1' && ch <= '9' {
						// Fast path: plain positive integer.
						i++
						for i < n && d[i]-'0' <= 9 {
							i++
						}
						if i < n && (d[i] == '.' || d[i] == 'e' || d[i] == 'E') {
							i = start
						}
					}
					if i == start {
						var ok bool
						if i, ok = skipNumber(d, i); !ok {
							return false
						}
					}
					if ctx == cUsage {
						if i >= n {
							// A number running into the end of the
							// input may be cut short: do not report it.
							return false
						}
						c.HasUsage = true
						if key == kPrompt {
							c.PromptTokens = intPart(d[start:i])
						} else if key == kCompletion {
							c.CompletionTokens = intPart(d[start:i])
						}
					}
				}
				if key == kError {
					c.Error = true
				}
				st = stAfter
				continue
			}
			fallthrough
		case stStr:
			// d[i] == '"'. Find the closing quote q (-1 if none), 8 bytes
			// at a time, stepping over backslash escapes.
			s := i + 1
			j, q := s, -1
			for j+8 <= n {
				w := binary.LittleEndian.Uint64(d[j:])
				x1 := w ^ (lsb * '"')
				x2 := w ^ (lsb * '\\')
				m := ((x1-lsb)&^x1 | (x2-lsb)&^x2) & msb
				if m == 0 {
					j += 8
					continue
				}
				// The lowest flagged byte is exact (the zero-byte trick
				// only gives false positives above a true match).
				k := j + bits.TrailingZeros64(m)>>3
				if d[k] == '"' {
					q = k
					break
				}
				j = k + 2 // the backslash and the byte it escapes
			}
			if q < 0 {
				for j < n {
					if d[j] == '"' {
						q = j
						break
					}
					if d[j] == '\\' {
						j += 2
					} else {
						j++
					}
				}
			}
			if st == stKey {
				if q < 0 {
					return false
				}
				key = kNone
				if ctx != cSkip {
					key = keyFor(ctx, nameOf(d[s:q]))
				}
				var ok bool
				if i, ok = afterKey(d, q+1); !ok {
					return false
				}
				st = stValue
				continue
			}
			switch key {
			case kNone:
			case kContent, kText:
				// Decided by the first byte, so that a truncated
				// non-empty string counts.
				if s < n && d[s] != '"' {
					c.Tokens = 1
				}
			case kID:
				if q >= 0 {
					c.ID = d[s:q]
				}
			case kModel:
				if q >= 0 {
					c.Model = d[s:q]
				}
			case kFinish:
				if q > s && c.FinishReason == nil {
					c.FinishReason = d[s:q]
				}
			case kError:
				c.Error = true
			}
			if q < 0 {
				return false
			}
			i = q + 1
			st = stAfter
		default: // stAfter
			if depth == 0 {
				for i < n && isSpace(d[i]) {
					i++
				}
				return i == n
			}
			for i < n && isSpace(d[i]) {
				i++
			}
			if i >= n {
				return false
			}
			switch d[i] {
			case ',':
				i++
				for i < n && isSpace(d[i]) {
					i++
				}
				if obj {
					st = stKey
				} else {
					st = stValue
				}
			case '}':
				if !obj {
					return false
				}
				i++
				depth--
				ctx, key = ctxAt(&ctxs, depth), kNone
				obj = parentIsObj(&isObj, depth)
			case ']':
				if obj {
					return false
				}
				i++
				depth--
				ctx, key = ctxAt(&ctxs, depth), kNone
				obj = parentIsObj(&isObj, depth)
			default:
				return false
			}
		}
	}
}

// parentIsObj reports whether the innermost container is an object when
// depth containers are open.
func parentIsObj(isObj *[maxDepth / 64]uint64, depth int) bool {
	top := uint(depth-1) % maxDepth
	return isObj[top>>6]&(uint64(1)<<(top&63)) != 0
}

// ctxAt returns the context of the innermost container when depth
// containers are open.
func ctxAt(ctxs *[4]uint8, depth int) uint8 {
	if depth >= 1 && depth <= len(ctxs) {
		return ctxs[depth-1]
	}
	return cSkip
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
		dg := int(ch - '0')
		if v > (maxUsageValue-dg)/10 { // v*10+dg would exceed the cap (or overflow int32)
			return maxUsageValue
		}
		v = v*10 + dg
	}
	return v
}
