package otlpproto

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"io"

	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"

	"github.com/tokentrace/tokentrace/analyzer/model"
	du "github.com/tokentrace/tokentrace/analyzer/source/internal/decodeutil"
)

// Skip reasons reported by Decode (besides the span checks every decoder
// makes: missing ids, missing times, negative duration).
const (
	ReasonTruncated     = "truncated OTLP protobuf (rest of file skipped)"
	ReasonMalformed     = "malformed OTLP protobuf message"
	ReasonTooLarge      = "OTLP protobuf message too large (rest of file skipped)"
	ReasonBadWireFormat = "malformed OTLP protobuf framing (rest of file skipped)"
)

// Protobuf wire facts used to recognise a TracesData.
const (
	tagResourceSpans = 1<<3 | 2 // TracesData.resource_spans, length-delimited
	tagResource      = 1<<3 | 2 // ResourceSpans.resource
	tagScopeSpans    = 2<<3 | 2 // ResourceSpans.scope_spans
	tagSchemaURL     = 3<<3 | 2 // ResourceSpans.schema_url
)

// Sniff reports whether prefix, the start of a file, looks like OTLP
// protobuf, length-prefixed or a single message.
func Sniff(prefix []byte) bool {
	_, ok := framing(prefix)
	return ok
}

// framing recognises the two layouts: a single TracesData starts with the
// tag of resource_spans and a length followed by a ResourceSpans field; a
// length-prefixed file starts with a big-endian length then that tag.
func framing(p []byte) (delimited, ok bool) {
	if len(p) >= 2 && p[0] == tagResourceSpans {
		l, n := binary.Uvarint(p[1:])
		if n > 0 && l <= uint64(du.MaxValueBytes) {
			rest := p[1+n:]
			if l == 0 || len(rest) == 0 {
				return false, true
			}
			switch rest[0] {
			case tagResource, tagScopeSpans, tagSchemaURL:
				return false, true
			}
		}
	}
	if len(p) >= 5 {
		n := binary.BigEndian.Uint32(p)
		if n > 0 && int64(n) <= du.MaxValueBytes && p[4] == tagResourceSpans {
			return true, true
		}
	}
	return false, false
}

// Decode reads OTLP protobuf from r, length-prefixed messages or a single
// message (told apart from the first bytes), and calls visit for every
// span. The span passed to visit is reused: it is valid only during the
// call. Records that cannot be decoded are reported to skip (reason,
// example) and skipped. Decode returns the first error of r or of visit.
func Decode(r io.Reader, name string, visit func(*model.Span) error, skip func(reason, example string)) error {
	br := bufio.NewReaderSize(r, du.PeekBytes)
	p, err := br.Peek(16)
	if err != nil && err != io.EOF && err != bufio.ErrBufferFull {
		return err
	}
	if skip == nil {
		skip = func(string, string) {}
	}
	d := &decoder{name: name, visit: visit, skip: skip, cr: &countingReader{br: br}}
	delimited, _ := framing(p)
	if delimited {
		err = d.delimited()
	} else {
		err = d.message()
	}
	if d.stop != nil {
		return d.stop
	}
	if d.cr.err != nil {
		return d.cr.err
	}
	return err
}

type decoder struct {
	name  string
	visit func(*model.Span) error
	skip  func(reason, example string)
	cr    *countingReader
	buf   bytes.Buffer
	span  model.Span
	stop  error
}

// countingReader counts bytes and keeps the first I/O error of the
// underlying reader (io.EOF is not one).
type countingReader struct {
	br  *bufio.Reader
	n   int64
	err error
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.br.Read(p)
	c.n += int64(n)
	if err != nil && err != io.EOF && c.err == nil {
		c.err = err
	}
	return n, err
}

func (c *countingReader) ReadByte() (byte, error) {
	b, err := c.br.ReadByte()
	if err == nil {
		c.n++
	} else if err != io.EOF && c.err == nil {
		c.err = err
	}
	return b, err
}

var errStop = errors.New("stopped")

func (d *decoder) at(off int64, what string) string {
	return du.Example(d.name, "", fmt.Sprintf("%s at byte %d", what, off))
}

// read fills d.buf with exactly n bytes; ok false when the input ends
// first (reported as truncated).
func (d *decoder) read(n int64, off int64, what string) (bool, error) {
	d.buf.Reset()
	got, err := io.CopyN(&d.buf, d.cr, n)
	if d.cr.err != nil {
		return false, d.cr.err
	}
	if err != nil || got != n {
		d.skip(ReasonTruncated, d.at(off, fmt.Sprintf("%s of %d bytes cut at %d", what, n, got)))
		return false, nil
	}
	return true, nil
}

func (d *decoder) delimited() error {
	var hdr [4]byte
	td := &tracepb.TracesData{}
	for msg := 1; ; msg++ {
		off := d.cr.n
		k, err := io.ReadFull(d.cr, hdr[:])
		if err == io.EOF {
			return nil
		}
		if d.cr.err != nil {
			return d.cr.err
		}
		if err != nil {
			d.skip(ReasonTruncated, d.at(off, fmt.Sprintf("length prefix of message %d cut after %d bytes", msg, k)))
			return nil
		}
		n := int64(binary.BigEndian.Uint32(hdr[:]))
		if n > du.MaxValueBytes {
			d.skip(ReasonTooLarge, d.at(off, fmt.Sprintf("message %d claims %d bytes (limit %s)", msg, n, du.SizeString(du.MaxValueBytes))))
			return nil
		}
		what := fmt.Sprintf("message %d", msg)
		ok, err := d.read(n, off, what)
		if !ok {
			return err
		}
		if err := proto.Unmarshal(d.buf.Bytes(), td); err != nil {
			d.skip(ReasonMalformed, d.at(off, what+": "+err.Error()))
			continue
		}
		for _, rs := range td.GetResourceSpans() {
			if err := d.resourceSpans(rs, du.Example(d.name, "", what)); err != nil {
				return err
			}
		}
	}
}

// message walks the fields of a single TracesData, unmarshalling one
// ResourceSpans at a time.
func (d *decoder) message() error {
	rs := &tracepb.ResourceSpans{}
	for field := 1; ; field++ {
		off := d.cr.n
		tag, err := binary.ReadUvarint(d.cr)
		if err == io.EOF {
			return nil
		}
		if d.cr.err != nil {
			return d.cr.err
		}
		if err != nil {
			d.skip(ReasonBadWireFormat, d.at(off, "bad field tag"))
			return nil
		}
		switch wt := tag & 7; wt {
		case 0: // varint
			if _, err := binary.ReadUvarint(d.cr); err != nil {
				return d.wire(off, "bad varint")
			}
		case 1, 5: // fixed64, fixed32
			size := int64(8)
			if wt == 5 {
				size = 4
			}
			if ok, err := d.read(size, off, "fixed field"); !ok {
				return err
			}
		case 2: // length-delimited
			l, err := binary.ReadUvarint(d.cr)
			if err != nil {
				return d.wire(off, "bad length")
			}
			if l > uint64(du.MaxValueBytes) {
				d.skip(ReasonTooLarge, d.at(off, fmt.Sprintf("field of %d bytes (limit %s)", l, du.SizeString(du.MaxValueBytes))))
				return nil
			}
			what := fmt.Sprintf("resourceSpans %d", field)
			ok, err := d.read(int64(l), off, what)
			if !ok {
				return err
			}
			if tag>>3 != 1 {
				continue // not resource_spans: unknown field
			}
			if err := proto.Unmarshal(d.buf.Bytes(), rs); err != nil {
				d.skip(ReasonMalformed, d.at(off, what+": "+err.Error()))
				continue
			}
			if err := d.resourceSpans(rs, du.Example(d.name, "", what)); err != nil {
				return err
			}
		default:
			d.skip(ReasonBadWireFormat, d.at(off, fmt.Sprintf("wire type %d", wt)))
			return nil
		}
	}
}

func (d *decoder) wire(off int64, what string) error {
	if d.cr.err != nil {
		return d.cr.err
	}
	d.skip(ReasonBadWireFormat, d.at(off, what))
	return nil
}

func (d *decoder) resourceSpans(rs *tracepb.ResourceSpans, where string) error {
	err := convert(rs, &d.span, where, d.visit, d.skip)
	if err != nil {
		d.stop = err
		return errStop
	}
	return nil
}

// FromTracesData calls visit for every span of td, for instance one
// message of Jaeger's api_v3 gRPC stream. where names td in skip
// examples. The span passed to visit is reused: it is valid only during
// the call. It returns the first error of visit.
func FromTracesData(td *tracepb.TracesData, where string, visit func(*model.Span) error, skip func(reason, example string)) error {
	if skip == nil {
		skip = func(string, string) {}
	}
	var s model.Span
	for _, rs := range td.GetResourceSpans() {
		if err := convert(rs, &s, where, visit, skip); err != nil {
			return err
		}
	}
	return nil
}

func convert(rs *tracepb.ResourceSpans, s *model.Span, where string, visit func(*model.Span) error, skip func(string, string)) error {
	service := ""
	for _, kv := range rs.GetResource().GetAttributes() {
		if kv.GetKey() == "service.name" {
			service = kv.GetValue().GetStringValue()
		}
	}
	for _, ss := range rs.GetScopeSpans() {
		for _, sp := range ss.GetSpans() {
			du.Reset(s)
			fill(s, sp, service)
			if reason := du.Check(s); reason != "" {
				detail := ""
				if s.TraceID == "" {
					detail = fmt.Sprintf("trace id of %d bytes", len(sp.GetTraceId()))
				} else if s.SpanID == "" {
					detail = fmt.Sprintf("span id of %d bytes", len(sp.GetSpanId()))
				}
				skip(reason, du.Example(where, s.TraceID, detail))
				continue
			}
			if err := visit(s); err != nil {
				return err
			}
		}
	}
	return nil
}

func fill(s *model.Span, sp *tracepb.Span, service string) {
	s.TraceID, _ = du.BytesID(sp.GetTraceId(), 16)
	s.SpanID, _ = du.BytesID(sp.GetSpanId(), 8)
	s.ParentSpanID, _ = du.BytesID(sp.GetParentSpanId(), 8)
	s.Service = service
	s.Name = sp.GetName()
	s.Kind = du.KindFromOTLP(int64(sp.GetKind()))
	s.Start = du.UnixNano(sp.GetStartTimeUnixNano())
	s.End = du.UnixNano(sp.GetEndTimeUnixNano())
	putAttrs(s.Attrs, sp.GetAttributes())
	for _, ev := range sp.GetEvents() {
		e := du.AddEvent(s)
		e.Name = ev.GetName()
		e.Time = du.UnixNano(ev.GetTimeUnixNano())
		putAttrs(e.Attrs, ev.GetAttributes())
	}
	if n := sp.GetDroppedEventsCount(); n < 1<<31 {
		s.DroppedEvents = int(n)
	}
	s.StatusError = sp.GetStatus().GetCode() == tracepb.Status_STATUS_CODE_ERROR
	s.StatusMessage = sp.GetStatus().GetMessage()
}

func putAttrs(m map[string]any, kvs []*commonpb.KeyValue) {
	for _, kv := range kvs {
		if v := value(kv.GetValue()); v != nil {
			m[kv.GetKey()] = v
		}
	}
}

// value returns the model value of an AnyValue (nil when empty). Bytes
// become base64 text, as OTLP JSON writes them.
func value(v *commonpb.AnyValue) any {
	switch x := v.GetValue().(type) {
	case *commonpb.AnyValue_StringValue:
		return x.StringValue
	case *commonpb.AnyValue_BoolValue:
		return x.BoolValue
	case *commonpb.AnyValue_IntValue:
		return x.IntValue
	case *commonpb.AnyValue_DoubleValue:
		return x.DoubleValue
	case *commonpb.AnyValue_ArrayValue:
		in := x.ArrayValue.GetValues()
		vals := make([]any, len(in))
		for i, e := range in {
			vals[i] = value(e)
		}
		return du.Array(vals)
	case *commonpb.AnyValue_KvlistValue:
		in := x.KvlistValue.GetValues()
		m := make(map[string]any, len(in))
		putAttrs(m, in)
		return m
	case *commonpb.AnyValue_BytesValue:
		return base64.StdEncoding.EncodeToString(x.BytesValue)
	}
	return nil
}
