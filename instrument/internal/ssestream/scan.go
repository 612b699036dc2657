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
	if !scanTop(d, &c, nil) {
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

// nest is the walker's nesting state (see scanTop).
type nest struct {
	depth    int
	obj      bool  // innermost container is an object
	ctx, key uint8 // context of the innermost container, meaning of the next value
	ctxs     [4]uint8
	isObj    [maxDepth / 64]uint64
}

// snapshot is the walker state at a resume point: the opening quote of the
// first string value of a content-like member (choices[i].text, or
// content/reasoning_content/reasoning/refusal of choices[i].delta or
// .message), where the walk is in state stValue. The walk up to that quote
// reads no byte after it and depends on nothing else (see the package
// documentation, "Fast path"), so for any payload that starts with the same
// bytes up to and including the quote, a walk resumed from the snapshot is
// the walk ScanChunk does.
type snapshot struct {
	pos   int     // index of the opening quote; the prefix is d[:pos+1]
	nest  nest    // nesting state at pos
	c     Chunk   // fields found before pos, byte slices nil (see spans)
	spans [3]span // Model, ID, FinishReason of c as offsets in d
}

// span locates a byte slice of a Chunk in the payload: d[start:end], or nil
// when start < 0.
type span struct{ start, end int }

var noSpan = span{-1, -1}

// spanOf returns the span of b, nil or a sub-slice d[s:q] of d. Such a
// slice has the capacity of d minus s, which gives s without pointer
// arithmetic.
func spanOf(d, b []byte) span {
	if b == nil {
		return noSpan
	}
	s := cap(d) - cap(b)
	return span{s, s + len(b)}
}

// of returns d[start:end], nil for noSpan.
func (sp span) of(d []byte) []byte {
	if sp.start < 0 {
		return nil
	}
	return d[sp.start:sp.end]
}

// take records the walker state at the opening quote d[i].
func (s *snapshot) take(d []byte, c *Chunk, i int, ns *nest) {
	s.pos, s.nest, s.c = i, *ns, *c
	s.spans = [3]span{spanOf(d, c.Model), spanOf(d, c.ID), spanOf(d, c.FinishReason)}
	// Keep no reference to the caller's bytes.
	s.c.Model, s.c.ID, s.c.FinishReason = nil, nil, nil
}

// maxHoles bounds the number of usage numbers a tail template can vary.
const maxHoles = 4

// holes records the usage numbers of a walk that are plain integers
// ([1-9][0-9]*), as candidate holes of a tail template (see the package
// documentation, "Fast path"): the walker's control flow does not depend on
// the digits of such a number, only on the byte after it, and the digits
// only end up in PromptTokens or CompletionTokens.
type holes struct {
	n  int
	at [maxHoles]span // the digits, in document order
	// Index in at of the number that set PromptTokens (CompletionTokens)
	// last in the walk, -1 if none did or the last one is not a hole.
	prompt, completion int
}

func (h *holes) reset() { h.n, h.prompt, h.completion = 0, -1, -1 }

// number records the usage number d[start:end] with meaning key (called
// only when the walker accepted it and a byte follows it).
func (h *holes) number(d []byte, start, end int, key uint8) {
	idx := -1
	if h.n < maxHoles && isPlainInt(d[start:end]) {
		idx = h.n
		h.at[idx] = span{start, end}
		h.n++
	}
	switch key {
	case kPrompt:
		h.prompt = idx
	case kCompletion:
		h.completion = idx
	}
}

// isPlainInt reports whether b matches [1-9][0-9]*.
func isPlainInt(b []byte) bool {
	if len(b) == 0 || b[0] < '1' || b[0] > '9' {
		return false
	}
	for _, ch := range b[1:] {
		if ch-'0' > 9 {
			return false
		}
	}
	return true
}

// closeQuote returns the index of the first unescaped '"' in d[s:], or -1.
// A backslash escapes the byte after it, whatever it is. scanTop has the
// same loop inlined (TestCloseQuote checks them against a plain loop).
func closeQuote(d []byte, s int) int {
	n := len(d)
	j := s
	// 8 bytes at a time.
	for j+8 <= n {
		w := binary.LittleEndian.Uint64(d[j:])
		x1 := w ^ (lsb * '"')
		x2 := w ^ (lsb * '\\')
		m := ((x1-lsb)&^x1 | (x2-lsb)&^x2) & msb
		if m == 0 {
			j += 8
			continue
		}
		// The lowest flagged byte is exact (the zero-byte trick only
		// gives false positives above a true match).
		k := j + bits.TrailingZeros64(m)>>3
		if d[k] == '"' {
			return k
		}
		j = k + 2 // the backslash and the byte it escapes
	}
	for j < n {
		if d[j] == '"' {
			return j
		}
		if d[j] == '\\' {
			j += 2
		} else {
			j++
		}
	}
	return -1
}

// walk asks scanTop for more than ScanChunk's walk.
type walk struct {
	// from != nil resumes a walk at d[i] in state st with nesting state
	// *from and the fields already in c: the caller guarantees that this
	// is the state a walk from d[0] has there.
	from  *nest
	i, st int
	// save, when not nil, receives the state at the first resume point
	// the walk reaches (if any); scanTop then sets it to nil.
	save *snapshot
	// rec, when not nil, records the usage numbers met (see holes).
	rec *holes
}

// scanTop walks d (already trimmed), filling c. It returns false if d is not
// exactly one well-formed JSON object. It is a single iterative loop (no
// recursion, no calls per token on the common path): the nesting is tracked
// with a bit stack (object or array) bounded by maxDepth, and the context of
// the first four levels, which is all the interpreted paths need.
//
// w == nil is ScanChunk's walk. Otherwise, see walk.
func scanTop(d []byte, c *Chunk, w *walk) bool {
	n := len(d)
	var isObj [maxDepth / 64]uint64
	// ctxs: context per level while depth <= 4. w is kept with it in
	// memory: it is used off the hot path only.
	var aux struct {
		ctxs [4]uint8
		w    *walk
	}
	aux.w = w
	var depth, i, st int
	var obj bool // innermost container is an object
	var ctx, key uint8
	if w != nil && w.from != nil {
		f := w.from
		isObj, aux.ctxs = f.isObj, f.ctxs
		depth, obj, ctx, key = f.depth, f.obj, f.ctx, f.key
		i, st = w.i, w.st
	} else {
		if n == 0 || d[0] != '{' {
			return false
		}
		isObj[0] = 1
		aux.ctxs[0] = cTop
		depth = 1
		obj = true
		ctx, key = cTop, kNone
		i = 1
		for i < n && isSpace(d[i]) {
			i++
		}
		st = stKey
		if i < n && d[i] == '}' {
			i++
			depth = 0
			st = stAfter
		}
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
					if depth < len(aux.ctxs) {
						aux.ctxs[depth] = nc
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
						ctx = ctxAt(&aux.ctxs, depth)
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
						if w := aux.w; w != nil && w.rec != nil {
							w.rec.number(d, start, i, key)
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
			// at a time, stepping over backslash escapes (closeQuote,
			// inlined by hand).
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
				if w := aux.w; w != nil && w.save != nil {
					// Resume point (st == stValue): nothing has
					// been done for this string yet.
					w.save.take(d, c, i, &nest{depth, obj, ctx, key, aux.ctxs, isObj})
					w.save = nil
				}
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
				ctx, key = ctxAt(&aux.ctxs, depth), kNone
				obj = parentIsObj(&isObj, depth)
			case ']':
				if obj {
					return false
				}
				i++
				depth--
				ctx, key = ctxAt(&aux.ctxs, depth), kNone
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
