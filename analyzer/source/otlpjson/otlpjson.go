package otlpjson

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/tokentrace/tokentrace/analyzer/model"
	du "github.com/tokentrace/tokentrace/analyzer/source/internal/decodeutil"
)

// Skip reasons reported by Decode (besides the span checks every decoder
// makes: missing ids, missing times, negative duration).
const (
	ReasonMalformedLine = "malformed OTLP JSON line (rest of line skipped)"
	ReasonLineTooLong   = "OTLP JSON line too long"
	ReasonMalformedRest = "malformed OTLP JSON (rest of file skipped)"
	ReasonSpanTooLong   = "OTLP JSON span too large (rest of file skipped)"
	ReasonSpanTypes     = "OTLP JSON span with wrong field types"
	ReasonResourceTypes = "OTLP JSON resource with wrong field types (service unknown)"
	ReasonStructure     = "unexpected OTLP JSON structure"
	ReasonAPIError      = "Jaeger API error answer"
	ReasonNoTracesData  = "OTLP JSON value without resourceSpans"
)

const (
	maxWrapperDepth       = 3   // arrays and result objects around a TracesData
	describeValueMaxBytes = 160 // of an API error quoted in a skip
)

// Sniff reports whether prefix, the start of a file, looks like OTLP JSON:
// a JSON object (or an array of objects) with a resourceSpans key, or a
// Jaeger api_v3 answer ({"result": ...} or {"error": ...}).
func Sniff(prefix []byte) bool {
	_, keys := du.TopKeys(prefix)
	for _, k := range keys {
		switch k {
		case "resourceSpans", "resource_spans", "result":
			return true
		}
	}
	return len(keys) == 1 && keys[0] == "error"
}

// Decode reads OTLP JSON from r and calls visit for every span, in file
// order. The span passed to visit is reused for the next one: it is valid
// only during the call. Records that cannot be decoded are reported to
// skip (reason, example) with name:line and skipped. Decode returns the
// first error of r or of visit, and nil otherwise.
func Decode(r io.Reader, name string, visit func(*model.Span) error, skip func(reason, example string)) error {
	br := bufio.NewReaderSize(r, du.PeekBytes)
	peek, err := br.Peek(du.PeekBytes)
	if err != nil && err != io.EOF && err != bufio.ErrBufferFull {
		return err
	}
	if bytes.HasPrefix(peek, []byte("\xef\xbb\xbf")) {
		_, _ = br.Discard(3)
		peek = peek[3:]
	}
	if skip == nil {
		skip = func(string, string) {}
	}
	d := &decoder{name: name, visit: visit, skip: skip}
	if isLines(peek) {
		return d.lines(br)
	}
	return d.document(br)
}

// isLines tells a file of JSON lines from a multi-line document: the first
// non-blank line of a line file is a whole JSON value. A first line longer
// than the peek window is taken as a line file (a document spread over
// lines starts with a short line such as "{").
func isLines(peek []byte) bool {
	p := bytes.TrimLeft(peek, " \t\r\n")
	nl := bytes.IndexByte(p, '\n')
	if nl < 0 {
		return true
	}
	return json.Valid(p[:nl])
}

type decoder struct {
	name  string
	visit func(*model.Span) error
	skip  func(reason, example string)
	r     *du.Reader
	dec   *json.Decoder
	line  int   // line files: the line being decoded
	stop  error // the visitor's error
	span  model.Span

	// spans of a resourceSpans read before its resource
	pending      []jsonSpan
	pendingLines []int

	// line files
	buf  []byte
	fast fastState
}

func (d *decoder) where() string {
	if d.line > 0 {
		return du.Where(d.name, d.line)
	}
	return du.Where(d.name, d.r.Line(d.dec))
}

func (d *decoder) lineOf() int {
	if d.line > 0 {
		return d.line
	}
	return d.r.Line(d.dec)
}

// lines decodes a file of JSON lines one line at a time. A well-formed
// line of the usual shape takes the fast path (fast.go); anything else —
// a syntax error, an unusual shape — is decoded by the streaming decoder,
// which reports what is wrong and where.
func (d *decoder) lines(br *bufio.Reader) error {
	for {
		line, tooLong, err := du.ReadLine(br, d.buf, du.MaxValueBytes)
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		d.line++
		if cap(line) <= 64<<20 {
			d.buf = line[:0] // keep the buffer, unless a giant line grew it
		}
		if tooLong {
			d.skip(ReasonLineTooLong, du.Example(du.Where(d.name, d.line), "", "longer than "+du.SizeString(du.MaxValueBytes)))
			continue
		}
		line = bytes.TrimSpace(line)
		if len(line) == 0 {
			continue
		}
		if !slowOnly && json.Valid(line) {
			handled, err := d.fastLine(line)
			if err != nil {
				return err
			}
			if handled {
				continue
			}
		}
		if err := d.slowLine(line); err != nil {
			return err
		}
	}
}

// step decodes the next top-level value.
func (d *decoder) step() error { return d.value(0) }

// stopped is the visitor's error, if it stopped the decoding.
func (d *decoder) stopped() error { return d.stop }

// slowOnly turns the fast path off (for tests comparing both paths).
var slowOnly = false

// slowLine decodes one line with the streaming decoder.
func (d *decoder) slowLine(line []byte) error {
	d.r = du.NewReader(bufio.NewReader(bytes.NewReader(line)))
	d.dec = json.NewDecoder(d.r)
	return d.r.Run(d.step, d.stopped, func(_ bool, err error) {
		d.skip(ReasonMalformedLine, du.Example(d.where(), "", err.Error()))
	})
}

func (d *decoder) document(br *bufio.Reader) error {
	d.r = du.NewReader(br)
	d.dec = json.NewDecoder(d.r)
	return d.r.Run(d.step, d.stopped, func(tooLong bool, err error) {
		if tooLong {
			d.skip(ReasonSpanTooLong, du.Example(d.where(), "", "a span larger than "+du.SizeString(d.r.Limit())))
		} else {
			d.skip(ReasonMalformedRest, du.Example(d.where(), "", err.Error()))
		}
	})
}

// value decodes one top-level value: a TracesData object, an array of
// them, or a wrapper. io.EOF means there is none left.
func (d *decoder) value(depth int) error {
	d.r.Mark()
	tok, err := d.dec.Token()
	if err != nil {
		if depth > 0 {
			err = du.Unexpected(err)
		}
		return err
	}
	switch tok {
	case json.Delim('{'):
		return d.tracesData(depth)
	case json.Delim('['):
		if depth >= maxWrapperDepth {
			d.structure("nested arrays")
			return du.SkipRest(d.dec)
		}
		for d.dec.More() {
			if err := d.value(depth + 1); err != nil {
				return du.Unexpected(err)
			}
		}
		return du.Close(d.dec)
	default:
		d.structure(fmt.Sprintf("%s where a TracesData object was expected", du.Describe(tok)))
		return nil
	}
}

func (d *decoder) structure(detail string) {
	d.skip(ReasonStructure, du.Example(d.where(), "", detail))
}

// tracesData reads the keys of a TracesData object (or of an api_v3
// wrapper) whose opening brace was read.
func (d *decoder) tracesData(depth int) error {
	found := false
	for {
		key, ok, err := du.Key(d.dec)
		if err != nil {
			return err
		}
		if !ok {
			if !found {
				d.skip(ReasonNoTracesData, du.Example(d.where(), "", ""))
			}
			return nil
		}
		switch key {
		case "resourceSpans", "resource_spans":
			found = true
			got, err := du.Elems(d.dec, d.resourceSpans)
			if err != nil {
				return err
			}
			if got != "" {
				d.structure("resourceSpans is " + got + ", want an array")
			}
		case "result":
			found = true
			if depth >= maxWrapperDepth {
				d.structure("nested result objects")
				if err := du.SkipValue(d.dec); err != nil {
					return err
				}
				continue
			}
			ok, got, err := du.Open(d.dec, '{')
			if err != nil {
				return err
			}
			if !ok {
				d.structure("result is " + got + ", want an object")
				continue
			}
			if err := d.tracesData(depth + 1); err != nil {
				return err
			}
		case "error":
			found = true
			var raw json.RawMessage
			if err := d.dec.Decode(&raw); err != nil {
				return du.Unexpected(err)
			}
			d.skip(ReasonAPIError, du.Example(d.where(), "", describe(raw)))
		default:
			if err := du.SkipValue(d.dec); err != nil {
				return err
			}
		}
	}
}

// describe returns a compact rendering of a small JSON value.
func describe(raw json.RawMessage) string {
	var b bytes.Buffer
	if json.Compact(&b, raw) != nil {
		return du.Truncate(string(raw), describeValueMaxBytes)
	}
	return du.Truncate(b.String(), describeValueMaxBytes)
}

func (d *decoder) resourceSpans() error {
	d.r.Mark()
	var service string
	haveResource := false
	d.pending, d.pendingLines = d.pending[:0], d.pendingLines[:0]
	got, err := du.Fields(d.dec, func(key string) error {
		switch key {
		case "resource":
			line := d.lineOf()
			var res jsonResource
			if err := d.dec.Decode(&res); err != nil {
				if !du.Recoverable(err) {
					return du.Unexpected(err)
				}
				d.skip(ReasonResourceTypes, du.Example(du.Where(d.name, line), "", err.Error()))
			} else {
				service = res.service()
			}
			haveResource = true
			return d.flushPending(service)
		case "scopeSpans", "scope_spans", "instrumentationLibrarySpans":
			got, err := du.Elems(d.dec, func() error { return d.scopeSpans(service, haveResource) })
			if got != "" {
				d.structure(key + " is " + got + ", want an array")
			}
			return err
		}
		return du.SkipValue(d.dec)
	})
	if err != nil {
		return err
	}
	if got != "" {
		d.structure("a resourceSpans element is " + got + ", want an object")
		return nil
	}
	return d.flushPending(service)
}

func (d *decoder) flushPending(service string) error {
	for i := range d.pending {
		if err := d.emit(&d.pending[i], service, d.pendingLines[i]); err != nil {
			return err
		}
	}
	d.pending, d.pendingLines = d.pending[:0], d.pendingLines[:0]
	return nil
}

func (d *decoder) scopeSpans(service string, haveResource bool) error {
	got, err := du.Fields(d.dec, func(key string) error {
		if key != "spans" {
			return du.SkipValue(d.dec)
		}
		got, err := du.Elems(d.dec, func() error { return d.spanElem(service, haveResource) })
		if got != "" {
			d.structure("spans is " + got + ", want an array")
		}
		return err
	})
	if got != "" {
		d.structure("a scopeSpans element is " + got + ", want an object")
	}
	return err
}

// spanElem reads one element of a spans array: emitted, or kept until the
// resource (and its service name) has been read.
func (d *decoder) spanElem(service string, haveResource bool) error {
	d.r.Mark()
	line := d.lineOf()
	var js jsonSpan
	if err := d.dec.Decode(&js); err != nil {
		if !du.Recoverable(err) {
			return du.Unexpected(err)
		}
		id, _ := du.HexID(js.TraceID, 16)
		d.skip(ReasonSpanTypes, du.Example(du.Where(d.name, line), id, err.Error()))
		return nil
	}
	if !haveResource {
		d.pending = append(d.pending, js)
		d.pendingLines = append(d.pendingLines, line)
		return nil
	}
	return d.emit(&js, service, line)
}

// errStop marks a visitor error on its way out.
var errStop = errors.New("stopped by the visitor")

func (d *decoder) emit(js *jsonSpan, service string, line int) error {
	s := &d.span
	du.Reset(s)
	js.fill(s, service)
	if reason := du.Check(s); reason != "" {
		detail := ""
		if s.TraceID == "" {
			detail = fmt.Sprintf("traceId %q", du.Truncate(js.TraceID, 40))
		} else if s.SpanID == "" {
			detail = fmt.Sprintf("spanId %q", du.Truncate(js.SpanID, 40))
		}
		d.skip(reason, du.Example(du.Where(d.name, line), s.TraceID, detail))
		return nil
	}
	if err := d.visit(s); err != nil {
		d.stop = err
		return errStop
	}
	return nil
}
