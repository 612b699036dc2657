package ssestream

import "bytes"

// DefaultMaxLine is the line size limit used when Parser.MaxLine is 0.
const DefaultMaxLine = 64 << 10

// minBufCap is the first capacity allocated for the pending-line buffer.
const minBufCap = 512

// Sink receives each parsed chunk. The *Chunk and the byte slices it holds
// are valid only during the call.
type Sink interface{ OnChunk(c *Chunk) }

// Parser splits a byte stream that arrives in arbitrary pieces into SSE lines
// and scans every data line as ScanChunk does, resuming from what it cached
// of the previous lines when they share a prefix (see the package
// documentation, "Fast path").
//
// The zero value is ready to use. A Parser is not safe for concurrent use.
type Parser struct {
	// MaxLine is the maximum number of bytes kept for one line, counted
	// without the terminating '\n' (a '\r' before it counts). 0 or a
	// negative value means DefaultMaxLine.
	MaxLine int

	Lines          int // non-blank lines seen (data, comments, other fields)
	DataLines      int // data lines with a non-blank payload (each one delivered to the Sink)
	MalformedLines int // data lines whose chunk was Malformed
	OversizedLines int // lines longer than MaxLine (truncated)

	buf        []byte // pending partial line, len(buf) <= MaxLine
	discarding bool   // dropping the tail of an oversized line until '\n'
	chunk      Chunk  // reused so that passing &chunk to the Sink does not allocate

	fast fastPath
}

// Sizes of the fast path's copies (one allocation of cacheBufSize bytes,
// made the first time a resume point is cached). Longer prefixes or tails
// are not cached.
const (
	maxPrefix    = 512 // cached line prefix, "data: " included
	maxTail      = 512 // cached payload tail
	cacheBufSize = maxPrefix + maxTail
)

// fastPath caches what the last payloads of the stream had in common (see
// the package documentation, "Fast path").
type fastPath struct {
	// line is a copy of the start of the last data line whose payload walk
	// reached a resume point, up to and including the opening quote of the
	// resume string. snap is the walk state at the quote, offsets relative
	// to the start of the payload. Empty line: nothing cached.
	line []byte
	snap snapshot
	// Data lines that did not start with line since the last one that did,
	// and resume points cached meanwhile. When lines keep replacing the
	// resume point (n > 1 choices alternating, say), caching is tried again
	// only now and then.
	misses, retakes int

	// Tail template for snap (empty tail: none). tail is a copy of a
	// payload from the closing quote of the resume string to its end;
	// tailRes is the result of walking it from snap's state at the byte
	// after the closing quote with Tokens 0 (slices nil, see tailSp), and
	// holes the plain integer usage numbers in it (offsets relative to the
	// closing quote), which may differ in the payloads that match it.
	tail     []byte
	tailRes  Chunk
	tailSp   [3]tailSpan // Model, ID, FinishReason of tailRes
	holes    holes
	tailMiss int // tail lookups that failed in a row
}

// tailSpan is a span of a walk result relative to the start of the payload
// or, when rel is set, to the closing quote of the resume string.
type tailSpan struct {
	span
	rel bool
}

func (t tailSpan) of(d []byte, q int) []byte {
	if t.rel {
		return d[q+t.start : q+t.end]
	}
	return t.span.of(d)
}

// tailSpanOf returns the span of b (nil or a sub-slice of d), relative to q
// when it starts after q.
func tailSpanOf(d, b []byte, q int) tailSpan {
	sp := spanOf(d, b)
	if sp.start > q {
		return tailSpan{span{sp.start - q, sp.end - q}, true}
	}
	return tailSpan{span: sp}
}

func (p *Parser) maxLine() int {
	if p.MaxLine > 0 {
		return p.MaxLine
	}
	return DefaultMaxLine
}

// Feed consumes the next piece of the stream and calls s.OnChunk for every
// data line completed by it. Lines fully contained in b are scanned in place;
// only a trailing partial line is copied into the internal buffer. s may be
// nil (counters are still updated).
func (p *Parser) Feed(b []byte, s Sink) {
	limit := p.maxLine()
	if len(p.buf) > limit { // MaxLine was lowered mid-line
		p.buf = p.buf[:limit]
	}
	for len(b) > 0 {
		if len(p.buf) != 0 || p.discarding {
			nl := bytes.IndexByte(b, '\n')
			if nl < 0 {
				if !p.discarding {
					p.partial(b, limit, s)
				}
				return
			}
			line := b[:nl]
			b = b[nl+1:]
			if p.discarding {
				p.discarding = false
				continue
			}
			// Complete the pending line.
			trunc := false
			if room := limit - len(p.buf); len(line) > room {
				line = line[:room]
				trunc = true
			}
			p.appendBuf(line, limit)
			p.line(p.buf, trunc, hintNone, s)
			p.buf = p.buf[:0]
			continue
		}
		// At the start of a line.
		if b[0] == '\n' { // blank line (ends an event)
			b = b[1:]
			continue
		}
		// The cached line prefix holds no '\n': when the line starts with
		// it, search for the end of the line after it only.
		hint, from := hintNone, 0
		if l := p.fast.line; len(l) != 0 && len(b) > len(l) {
			if string(b[:len(l)]) == string(l) {
				hint, from = hintHit, len(l)
			} else {
				hint = hintMiss
			}
		}
		nl := bytes.IndexByte(b[from:], '\n')
		if nl < 0 {
			p.partial(b, limit, s)
			return
		}
		line := b[:from+nl]
		b = b[from+nl+1:]
		if len(line) > limit {
			p.line(line[:limit], true, hintNone, s)
		} else {
			p.line(line, false, hint, s)
		}
	}
}

// partial buffers b, the start of a line that does not end in this Feed,
// after the pending bytes. When the line exceeds limit, its first limit
// bytes are delivered (truncated) at once and the rest is discarded up to
// the next '\n'.
func (p *Parser) partial(b []byte, limit int, s Sink) {
	room := limit - len(p.buf)
	if len(b) <= room {
		p.appendBuf(b, limit)
		return
	}
	if room > 0 {
		p.appendBuf(b[:room], limit)
	}
	p.line(p.buf, true, hintNone, s)
	p.buf = p.buf[:0]
	p.discarding = true
}

// appendBuf appends b to the pending buffer, never growing its capacity
// beyond limit (len(p.buf)+len(b) <= limit is guaranteed by the caller).
func (p *Parser) appendBuf(b []byte, limit int) {
	need := len(p.buf) + len(b)
	if need > cap(p.buf) {
		c := 2 * cap(p.buf)
		if c < minBufCap {
			c = minBufCap
		}
		if c < need {
			c = need
		}
		if c > limit {
			c = limit
		}
		nb := make([]byte, len(p.buf), c)
		copy(nb, p.buf)
		p.buf = nb
	}
	p.buf = append(p.buf, b...)
}

// What Feed already knows of a line and p.fast.line.
const (
	hintNone = iota // nothing
	hintHit         // the line starts with it
	hintMiss        // the line does not start with it
)

// line handles one complete line (without '\n'). truncated lines are
// prefixes of oversized lines. hint tells what is known of whether the line
// starts with p.fast.line.
func (p *Parser) line(line []byte, truncated bool, hint int, s Sink) {
	if truncated {
		p.OversizedLines++
	} else if n := len(line); n > 0 && line[n-1] == '\r' {
		// (Never part of p.fast.line, which ends with a quote.)
		line = line[:n-1]
	}
	if len(line) == 0 {
		return
	}
	p.Lines++
	if len(line) < 5 || string(line[:5]) != "data:" {
		return // comment, other field, or "data" without a value
	}
	payload := line[5:]
	if len(payload) > 0 && payload[0] == ' ' {
		payload = payload[1:]
	}
	d := trimSpace(payload)
	if len(d) == 0 {
		return
	}
	p.DataLines++
	if hint == hintNone {
		hint = hintMiss
		if l := p.fast.line; len(l) != 0 && len(line) >= len(l) && string(line[:len(l)]) == string(l) {
			hint = hintHit
		}
	}
	if hint == hintHit {
		p.resume(d)
	} else {
		p.scan(d, line)
	}
	p.chunk.Truncated = truncated
	if p.chunk.Malformed {
		p.MalformedLines++
	}
	if s != nil {
		s.OnChunk(&p.chunk)
	}
	// Do not retain references to the caller's bytes.
	p.chunk.Model, p.chunk.ID, p.chunk.FinishReason = nil, nil, nil
}

// scan sets p.chunk to ScanChunk(d), where d is the trimmed, non-empty
// payload of line, and caches the resume point it reaches, if any.
func (p *Parser) scan(d, line []byte) {
	c := &p.chunk
	*c = Chunk{}
	if len(d) == 6 && string(d) == "[DONE]" {
		c.Done = true
		return
	}
	fp := &p.fast
	fp.misses++
	if fp.retakes >= 3 && fp.misses%64 != 0 {
		if !scanTop(d, c, nil) {
			c.Malformed = true
		}
		return
	}
	old := fp.snap.pos
	fp.snap.pos = -1 // set by scanTop when it takes a snapshot
	if !scanTop(d, c, &walk{save: &fp.snap}) {
		c.Malformed = true
	}
	if fp.snap.pos < 0 { // no resume point: keep the cached one
		fp.snap.pos = old
		return
	}
	fp.retakes++
	fp.tail, fp.tailMiss = fp.tail[:0], 0
	off := cap(line) - cap(d) // d is line[off:...]
	if end := off + fp.snap.pos + 1; end <= maxPrefix {
		if fp.line == nil {
			buf := make([]byte, cacheBufSize)
			fp.line, fp.tail = buf[:0:maxPrefix], buf[maxPrefix:maxPrefix:cacheBufSize]
		}
		fp.line = append(fp.line[:0], line[:end]...)
	} else {
		fp.line = fp.line[:0] // the snapshot was replaced
	}
}

// resume sets p.chunk to ScanChunk(d), where d is the trimmed payload of a
// line that starts with p.fast.line, using the cached snapshot and tail.
func (p *Parser) resume(d []byte) {
	c := &p.chunk
	fp := &p.fast
	fp.misses, fp.retakes = 0, 0
	sn := &fp.snap
	s := sn.pos + 1
	q := closeQuote(d, s)
	if q < 0 { // unterminated: let the walker decide
		*c = sn.c
		c.Model, c.ID, c.FinishReason = sn.spans[0].of(d), sn.spans[1].of(d), sn.spans[2].of(d)
		if !scanTop(d, c, &walk{from: &sn.nest, i: sn.pos, st: stValue}) {
			c.Malformed = true
		}
		return
	}
	tok := sn.c.Tokens
	if q > s { // what the walker tests: d[s] != '"'
		tok = 1
	}
	if len(fp.tail) != 0 && fp.applyTail(d, q, c) {
		fp.tailMiss = 0
		c.Tokens |= tok
		return
	}
	// Walk the tail with Tokens 0 (the walker only ever sets Tokens to 1,
	// never reads it), so that its own contribution can be cached.
	*c = sn.c
	c.Model, c.ID, c.FinishReason = sn.spans[0].of(d), sn.spans[1].of(d), sn.spans[2].of(d)
	c.Tokens = 0
	fp.tailMiss++
	tail := d[q:]
	// Cache the tail unless it is too long, or unless tails keep changing
	// in ways holes do not cover: then only retry now and then.
	var rec *holes
	if len(tail) <= cap(fp.tail) && (fp.tailMiss <= 2 || fp.tailMiss%64 == 0) {
		rec = &fp.holes
		rec.reset()
	}
	if !scanTop(d, c, &walk{from: &sn.nest, i: q + 1, st: stAfter, rec: rec}) {
		c.Malformed = true
	}
	if rec != nil {
		fp.tail = append(fp.tail[:0], tail...)
		fp.tailRes = *c
		fp.tailRes.Model, fp.tailRes.ID, fp.tailRes.FinishReason = nil, nil, nil
		fp.tailSp = [3]tailSpan{tailSpanOf(d, c.Model, q), tailSpanOf(d, c.ID, q), tailSpanOf(d, c.FinishReason, q)}
		if fp.tailSp[0].rel || fp.tailSp[1].rel || fp.tailSp[2].rel {
			// Slices in the tail: its length must not change.
			rec.reset()
		}
		for j := range rec.n {
			rec.at[j].start -= q
			rec.at[j].end -= q
		}
	}
	c.Tokens |= tok
}

// applyTail sets *c (but Tokens, see resume) from the tail template if
// d[q:] matches it: the bytes outside the holes are equal and each hole
// holds a plain integer. It reports whether it matched.
func (fp *fastPath) applyTail(d []byte, q int, c *Chunk) bool {
	t, tail, h := fp.tail, d[q:], &fp.holes
	var vals [maxHoles]span
	pt, pd := 0, 0 // positions in t and tail
	for j := range h.n {
		hole := h.at[j]
		seg := t[pt:hole.start]
		e := pd + len(seg)
		if e >= len(tail) || string(tail[pd:e]) != string(seg) || tail[e]-'1' > 8 {
			return false
		}
		pd = e
		for e++; e < len(tail) && tail[e]-'0' <= 9; e++ {
		}
		// The byte after the digits is compared with the one after the
		// hole (a non-digit, not '.', 'e' or 'E') by the next segment.
		vals[j] = span{pd, e}
		pd, pt = e, hole.end
	}
	if string(tail[pd:]) != string(t[pt:]) {
		return false
	}
	*c = fp.tailRes
	if j := h.prompt; j >= 0 && j < h.n {
		c.PromptTokens = intPart(tail[vals[j].start:vals[j].end])
	}
	if j := h.completion; j >= 0 && j < h.n {
		c.CompletionTokens = intPart(tail[vals[j].start:vals[j].end])
	}
	c.Model, c.ID, c.FinishReason = fp.tailSp[0].of(d, q), fp.tailSp[1].of(d, q), fp.tailSp[2].of(d, q)
	return true
}

// Close ends the stream: a pending partial line (the server omitted the final
// newline) is scanned and delivered too. The line state is then reset so the
// Parser can be reused; the counters are kept so the caller can read the
// totals (Reset clears them).
func (p *Parser) Close(s Sink) {
	if len(p.buf) > 0 && !p.discarding {
		p.line(p.buf, false, hintNone, s)
	}
	p.buf = p.buf[:0]
	p.discarding = false
	p.chunk = Chunk{}
}

// Reset prepares the Parser for another stream: pending data, counters and
// the fast path's caches are dropped, MaxLine and the buffers are kept.
func (p *Parser) Reset() {
	p.buf = p.buf[:0]
	p.discarding = false
	p.chunk = Chunk{}
	p.fast.line, p.fast.tail = p.fast.line[:0], p.fast.tail[:0]
	p.fast.misses, p.fast.retakes = 0, 0
	p.Lines, p.DataLines, p.MalformedLines, p.OversizedLines = 0, 0, 0, 0
}
