package jaegerjson

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/tokentrace/tokentrace/analyzer/model"
	du "github.com/tokentrace/tokentrace/analyzer/source/internal/decodeutil"
)

// Skip reasons reported by Decode (besides the span checks every decoder
// makes: missing ids, missing times, negative duration).
const (
	ReasonMalformedRest = "malformed Jaeger JSON (rest of file skipped)"
	ReasonTraceTooLarge = "Jaeger JSON trace too large (rest of file skipped)"
	ReasonSpanTypes     = "Jaeger JSON span with wrong field types"
	ReasonProcessTypes  = "Jaeger JSON process with wrong field types (service unknown)"
	ReasonStructure     = "unexpected Jaeger JSON structure"
	ReasonAPIError      = "Jaeger API error answer"
)

// Sniff reports whether prefix, the start of a file, looks like Jaeger UI
// JSON: an object (or an array of objects) with a data, traceID, spans or
// processes key.
func Sniff(prefix []byte) bool {
	_, keys := du.TopKeys(prefix)
	for _, k := range keys {
		if k == "data" || isTraceKey(k) {
			return true
		}
	}
	return false
}

func isTraceKey(k string) bool {
	switch k {
	case "traceID", "spans", "processes":
		return true
	}
	return false
}

// Decode reads Jaeger UI JSON from r and calls visit for every span, trace
// by trace. The span passed to visit is reused: it is valid only during
// the call. Records that cannot be decoded are reported to skip (reason,
// example) with name:line and skipped. Decode returns the first error of
// r or of visit, and nil otherwise.
func Decode(r io.Reader, name string, visit func(*model.Span) error, skip func(reason, example string)) error {
	br := bufio.NewReaderSize(r, du.PeekBytes)
	if p, err := br.Peek(3); err == nil && string(p) == "\xef\xbb\xbf" {
		_, _ = br.Discard(3)
	}
	if skip == nil {
		skip = func(string, string) {}
	}
	d := &decoder{name: name, visit: visit, skip: skip, procs: map[string]string{}}
	d.r = du.NewReader(br)
	d.dec = json.NewDecoder(d.r)
	return d.r.Run(d.top, func() error { return d.stop }, func(tooLong bool, err error) {
		if tooLong {
			d.skip(ReasonTraceTooLarge, du.Example(d.where(), "", "a trace larger than "+du.SizeString(d.r.Limit())))
		} else {
			d.skip(ReasonMalformedRest, du.Example(d.where(), "", err.Error()))
		}
	})
}

type decoder struct {
	name  string
	visit func(*model.Span) error
	skip  func(reason, example string)
	r     *du.Reader
	dec   *json.Decoder
	stop  error
	span  model.Span

	// the trace being read
	spans []jaegerSpan
	lines []int
	procs map[string]string // processID → service name
}

var errStop = errors.New("stopped")

func (d *decoder) where() string { return du.Where(d.name, d.r.Line(d.dec)) }

func (d *decoder) structure(detail string) {
	d.skip(ReasonStructure, du.Example(d.where(), "", detail))
}

// top reads one top-level value; io.EOF means there is none left.
func (d *decoder) top() error {
	d.r.Mark()
	tok, err := d.dec.Token()
	if err != nil {
		return err
	}
	switch tok {
	case json.Delim('['):
		return d.traces()
	case json.Delim('{'):
		return d.object()
	}
	d.structure(du.Describe(tok) + " where traces were expected")
	return nil
}

// traces reads an array of traces whose '[' was read.
func (d *decoder) traces() error {
	for d.dec.More() {
		d.r.Mark()
		ok, got, err := du.Open(d.dec, '{')
		if err != nil {
			return err
		}
		if !ok {
			d.structure("a trace is " + got + ", want an object")
			continue
		}
		key, ok, err := du.Key(d.dec)
		if err != nil {
			return err
		}
		if ok {
			if err := d.trace(key); err != nil {
				return err
			}
		}
	}
	return du.Close(d.dec)
}

// object reads a top-level object whose '{' was read: an API answer
// ({"data": [...], "errors": ...}) or a single trace.
func (d *decoder) object() error {
	for {
		key, ok, err := du.Key(d.dec)
		if err != nil {
			return err
		}
		if !ok {
			return nil
		}
		if isTraceKey(key) {
			return d.trace(key)
		}
		switch key {
		case "data":
			tok, err := d.dec.Token()
			if err != nil {
				return du.Unexpected(err)
			}
			switch tok {
			case json.Delim('['):
				if err := d.traces(); err != nil {
					return err
				}
			case json.Delim('{'):
				key, ok, err := du.Key(d.dec)
				if err != nil {
					return err
				}
				if ok {
					if err := d.trace(key); err != nil {
						return err
					}
				}
			case nil: // "data": null, as error answers have
			default:
				d.structure("data is " + du.Describe(tok) + ", want an array of traces")
			}
		case "errors":
			if err := d.apiErrors(); err != nil {
				return err
			}
		default:
			if err := du.SkipValue(d.dec); err != nil {
				return err
			}
		}
	}
}

func (d *decoder) apiErrors() error {
	line := d.r.Line(d.dec)
	var raw json.RawMessage
	if err := d.dec.Decode(&raw); err != nil {
		return du.Unexpected(err)
	}
	var errs []struct {
		Code    du.Int64 `json:"code"`
		Msg     string   `json:"msg"`
		TraceID string   `json:"traceID"`
	}
	if json.Unmarshal(raw, &errs) != nil {
		if s := string(bytes.TrimSpace(raw)); s != "null" && s != "[]" {
			d.skip(ReasonAPIError, du.Example(du.Where(d.name, line), "", du.Truncate(s, 160)))
		}
		return nil
	}
	for _, e := range errs {
		id, _ := du.HexID(e.TraceID, 16)
		d.skip(ReasonAPIError, du.Example(du.Where(d.name, line), id, strings.TrimSpace(fmt.Sprintf("%d %s", e.Code.V, e.Msg))))
	}
	return nil
}

// trace reads the keys of a trace object, the first of which (key) was
// read, then emits its spans.
func (d *decoder) trace(key string) error {
	d.r.Mark()
	var traceID string
	d.spans, d.lines = d.spans[:0], d.lines[:0]
	clear(d.procs)
	defer func() { clear(d.spans) }()
	for {
		switch key {
		case "traceID":
			var id du.Str
			if err := d.dec.Decode(&id); err != nil && !du.Recoverable(err) {
				return du.Unexpected(err)
			}
			traceID = id.V
		case "spans":
			if err := d.readSpans(traceID); err != nil {
				return err
			}
		case "processes":
			if err := d.readProcesses(traceID); err != nil {
				return err
			}
		default:
			if err := du.SkipValue(d.dec); err != nil {
				return err
			}
		}
		var ok bool
		var err error
		key, ok, err = du.Key(d.dec)
		if err != nil {
			return err
		}
		if !ok {
			break
		}
	}
	for i := range d.spans {
		if err := d.emit(&d.spans[i], traceID, d.lines[i]); err != nil {
			return err
		}
	}
	return nil
}

func (d *decoder) readSpans(traceID string) error {
	got, err := du.Elems(d.dec, func() error {
		line := d.r.Line(d.dec)
		var js jaegerSpan
		if err := d.dec.Decode(&js); err != nil {
			if !du.Recoverable(err) {
				return du.Unexpected(err)
			}
			tid := js.TraceID
			if tid == "" {
				tid = traceID
			}
			id, _ := du.HexID(tid, 16)
			d.skip(ReasonSpanTypes, du.Example(du.Where(d.name, line), id, err.Error()))
			return nil
		}
		d.spans = append(d.spans, js)
		d.lines = append(d.lines, line)
		return nil
	})
	if got != "" {
		d.structure("spans is " + got + ", want an array")
	}
	return err
}

func (d *decoder) readProcesses(traceID string) error {
	got, err := du.Fields(d.dec, func(key string) error {
		line := d.r.Line(d.dec)
		var p jaegerProcess
		if err := d.dec.Decode(&p); err != nil {
			if !du.Recoverable(err) {
				return du.Unexpected(err)
			}
			id, _ := du.HexID(traceID, 16)
			d.skip(ReasonProcessTypes, du.Example(du.Where(d.name, line), id, err.Error()))
		}
		d.procs[key] = p.ServiceName
		return nil
	})
	if got != "" {
		d.structure("processes is " + got + ", want an object")
	}
	return err
}

func (d *decoder) emit(js *jaegerSpan, traceID string, line int) error {
	s := &d.span
	du.Reset(s)
	js.fill(s, traceID, d.procs)
	if reason := du.Check(s); reason != "" {
		detail := ""
		if s.TraceID == "" {
			detail = fmt.Sprintf("traceID %q", du.Truncate(js.TraceID, 40))
		} else if s.SpanID == "" {
			detail = fmt.Sprintf("spanID %q", du.Truncate(js.SpanID, 40))
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

type jaegerSpan struct {
	TraceID       string `json:"traceID"`
	SpanID        string `json:"spanID"`
	ParentSpanID  string `json:"parentSpanID"`
	OperationName string `json:"operationName"`
	References    []struct {
		RefType string `json:"refType"`
		TraceID string `json:"traceID"`
		SpanID  string `json:"spanID"`
	} `json:"references"`
	StartTime du.Int64       `json:"startTime"`
	Duration  du.Int64       `json:"duration"`
	Tags      []tag          `json:"tags"`
	Logs      []logJSON      `json:"logs"`
	ProcessID string         `json:"processID"`
	Process   *jaegerProcess `json:"process"`
}

type jaegerProcess struct {
	ServiceName string `json:"serviceName"`
}

type logJSON struct {
	Timestamp du.Int64 `json:"timestamp"`
	Fields    []tag    `json:"fields"`
}

type tag struct {
	Key   du.Name   `json:"key"`
	Type  du.Name   `json:"type"`
	Value du.Scalar `json:"value"`
}

// maxMicros bounds times and durations so that converting them to
// nanoseconds cannot overflow.
const maxMicros = math.MaxInt64 / 1000

func (js *jaegerSpan) fill(s *model.Span, traceID string, procs map[string]string) {
	tid := js.TraceID
	if tid == "" {
		tid = traceID
	}
	s.TraceID, _ = du.HexID(tid, 16)
	s.SpanID, _ = du.HexID(js.SpanID, 8)
	parent := js.ParentSpanID
	for _, ref := range js.References {
		if parent != "" {
			break
		}
		if ref.RefType == "CHILD_OF" || ref.RefType == "" {
			parent = ref.SpanID
		}
	}
	s.ParentSpanID, _ = du.HexID(parent, 8)
	s.Name = js.OperationName
	if js.Process != nil {
		s.Service = js.Process.ServiceName
	} else {
		s.Service = procs[js.ProcessID]
	}
	if v := js.StartTime.V; v > 0 && v <= maxMicros {
		s.Start = time.UnixMicro(v)
		if v := js.Duration.V; js.Duration.Set && v >= -maxMicros && v <= maxMicros {
			s.End = s.Start.Add(time.Duration(v) * time.Microsecond)
		}
	}
	for i := range js.Tags {
		t := &js.Tags[i]
		switch string(t.Key) {
		case "span.kind":
			s.Kind = du.KindFromString(t.Value.Text)
		case "otel.status_code":
			if strings.Contains(strings.ToUpper(t.Value.Text), "ERROR") {
				s.StatusError = true
			}
		case "error":
			if b, ok := value(t).(bool); ok && b || t.Value.Text == "true" {
				s.StatusError = true
			}
		case "otel.status_description":
			s.StatusMessage = t.Value.Text
		case "otel.dropped_events_count":
			if n, ok := value(t).(int64); ok && n > 0 && n < 1<<31 {
				s.DroppedEvents = int(n)
			}
		case "otel.scope.name", "otel.scope.version", "otel.library.name", "otel.library.version",
			"w3c.tracestate", "internal.span.format":
			// Jaeger's own bookkeeping, not span attributes.
		default:
			if v := value(t); v != nil {
				s.Attrs[string(t.Key)] = v
			}
		}
	}
	for i := range js.Logs {
		l := &js.Logs[i]
		e := du.AddEvent(s)
		if v := l.Timestamp.V; v > 0 && v <= maxMicros {
			e.Time = time.UnixMicro(v)
		}
		for j := range l.Fields {
			f := &l.Fields[j]
			if f.Key == "event" && e.Name == "" && f.Value.Kind == 's' {
				e.Name = f.Value.Text
				continue
			}
			if v := value(f); v != nil {
				e.Attrs[string(f.Key)] = v
			}
		}
	}
}

// value converts a tag's value by its declared type, falling back to the
// JSON kind of the value when the type is missing or does not fit.
func value(t *tag) any {
	v := &t.Value
	switch strings.ToLower(string(t.Type)) {
	case "string", "binary":
		if v.Kind == 's' || v.Kind == 'n' || v.Kind == 'r' {
			return v.Text
		}
	case "bool":
		if v.Kind == 'b' {
			return v.Bool
		}
		if b, err := strconv.ParseBool(v.Text); err == nil && v.Kind == 's' {
			return b
		}
	case "int64":
		if v.Kind == 'n' || v.Kind == 's' {
			if n, err := strconv.ParseInt(v.Text, 10, 64); err == nil {
				return n
			}
			if f, err := strconv.ParseFloat(v.Text, 64); err == nil && f == math.Trunc(f) && math.Abs(f) < 1<<63 {
				return int64(f)
			}
		}
	case "float64":
		if v.Kind == 'n' || v.Kind == 's' {
			if f, err := strconv.ParseFloat(v.Text, 64); err == nil {
				return f
			}
			switch v.Text {
			case "NaN":
				return math.NaN()
			case "Infinity", "+Inf":
				return math.Inf(1)
			case "-Infinity", "-Inf":
				return math.Inf(-1)
			}
		}
	}
	switch v.Kind {
	case 's', 'r':
		return v.Text
	case 'b':
		return v.Bool
	case 'n':
		if n, err := strconv.ParseInt(v.Text, 10, 64); err == nil {
			return n
		}
		if f, err := strconv.ParseFloat(v.Text, 64); err == nil {
			return f
		}
		return v.Text
	}
	return nil
}
