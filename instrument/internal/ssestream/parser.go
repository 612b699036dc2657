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
// and scans every data line with ScanChunk.
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
		nl := bytes.IndexByte(b, '\n')
		if p.discarding {
			if nl < 0 {
				return
			}
			p.discarding = false
			b = b[nl+1:]
			continue
		}
		if nl < 0 {
			// Partial line: buffer it (bounded).
			room := limit - len(p.buf)
			if len(b) <= room {
				p.appendBuf(b, limit)
				return
			}
			if room > 0 {
				p.appendBuf(b[:room], limit)
			}
			p.line(p.buf, true, s)
			p.buf = p.buf[:0]
			p.discarding = true
			return
		}
		line := b[:nl]
		b = b[nl+1:]
		if len(p.buf) == 0 {
			if len(line) > limit {
				p.line(line[:limit], true, s)
			} else {
				p.line(line, false, s)
			}
			continue
		}
		// Complete the pending line.
		trunc := false
		if room := limit - len(p.buf); len(line) > room {
			line = line[:room]
			trunc = true
		}
		p.appendBuf(line, limit)
		p.line(p.buf, trunc, s)
		p.buf = p.buf[:0]
	}
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

// line handles one complete line (without '\n'). truncated lines are
// prefixes of oversized lines.
func (p *Parser) line(line []byte, truncated bool, s Sink) {
	if truncated {
		p.OversizedLines++
	} else if n := len(line); n > 0 && line[n-1] == '\r' {
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
	if len(trimSpace(payload)) == 0 {
		return
	}
	p.DataLines++
	p.chunk = ScanChunk(payload)
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

// Close ends the stream: a pending partial line (the server omitted the final
// newline) is scanned and delivered too. The line state is then reset so the
// Parser can be reused; the counters are kept so the caller can read the
// totals (Reset clears them).
func (p *Parser) Close(s Sink) {
	if len(p.buf) > 0 && !p.discarding {
		p.line(p.buf, false, s)
	}
	p.buf = p.buf[:0]
	p.discarding = false
	p.chunk = Chunk{}
}

// Reset prepares the Parser for another stream: pending data and counters
// are dropped, MaxLine and the buffer capacity are kept.
func (p *Parser) Reset() {
	p.buf = p.buf[:0]
	p.discarding = false
	p.chunk = Chunk{}
	p.Lines, p.DataLines, p.MalformedLines, p.OversizedLines = 0, 0, 0, 0
}
