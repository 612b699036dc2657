package otlpproto_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"os"
	"testing"

	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"

	"github.com/tokentrace/tokentrace/analyzer/model"
	"github.com/tokentrace/tokentrace/analyzer/source/otlpproto"
)

func count(t *testing.T, in []byte) (spans int, skips []string) {
	t.Helper()
	err := otlpproto.Decode(bytes.NewReader(in), "in", func(*model.Span) error {
		spans++
		return nil
	}, func(reason, example string) { skips = append(skips, reason+" @ "+example) })
	if err != nil {
		t.Fatal(err)
	}
	return spans, skips
}

func TestFixtures(t *testing.T) {
	for _, name := range []string{"trace.otlp.binpb", "trace.otlp.pb"} {
		b, err := os.ReadFile("../testdata/" + name)
		if err != nil {
			t.Fatal(err)
		}
		if !otlpproto.Sniff(b) {
			t.Errorf("%s: not sniffed", name)
		}
		if n, skips := count(t, b); n != 3 || len(skips) != 0 {
			t.Errorf("%s: %d spans, skips %v", name, n, skips)
		}
	}
}

func span(id byte) *tracepb.Span {
	return &tracepb.Span{
		TraceId: bytes.Repeat([]byte{id}, 16), SpanId: bytes.Repeat([]byte{id}, 8),
		StartTimeUnixNano: 1, EndTimeUnixNano: 2, Kind: tracepb.Span_SPAN_KIND_PRODUCER,
		Attributes: []*commonpb.KeyValue{
			{Key: "bytes", Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_BytesValue{BytesValue: []byte{1, 2, 3}}}},
			{Key: "kv", Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_KvlistValue{KvlistValue: &commonpb.KeyValueList{Values: []*commonpb.KeyValue{
				{Key: "x", Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_IntValue{IntValue: 1}}}}}}}},
		},
	}
}

func TestSingleMessageIsReadOneResourceSpansAtATime(t *testing.T) {
	td := &tracepb.TracesData{ResourceSpans: []*tracepb.ResourceSpans{
		{ScopeSpans: []*tracepb.ScopeSpans{{Spans: []*tracepb.Span{span(1), span(2)}}}},
		{ScopeSpans: []*tracepb.ScopeSpans{{Spans: []*tracepb.Span{span(3)}}}},
	}}
	b, _ := proto.Marshal(td)
	if n, skips := count(t, b); n != 3 || len(skips) != 0 {
		t.Errorf("%d spans, skips %v", n, skips)
	}
	// A broken second ResourceSpans leaves the first one's spans.
	first, _ := proto.Marshal(&tracepb.TracesData{ResourceSpans: td.ResourceSpans[:1]})
	broken := append(append([]byte{}, first...), 0x0a, 0x03, 0x0a, 0xff, 0xff)
	if n, skips := count(t, broken); n != 2 || len(skips) != 1 {
		t.Errorf("broken: %d spans, skips %v", n, skips)
	}
	var got []*model.Span
	err := otlpproto.FromTracesData(td, "td", func(s *model.Span) error {
		c := *s
		got = append(got, &c)
		return errors.New("stop")
	}, nil)
	if err == nil || len(got) != 1 || got[0].Kind != "producer" || got[0].Attrs["bytes"] != "AQID" {
		t.Errorf("FromTracesData: %v %+v", err, got)
	}
}

func TestSniff(t *testing.T) {
	msg, _ := proto.Marshal(&tracepb.TracesData{ResourceSpans: []*tracepb.ResourceSpans{{ScopeSpans: []*tracepb.ScopeSpans{{Spans: []*tracepb.Span{span(1)}}}}}})
	framed := binary.BigEndian.AppendUint32(nil, uint32(len(msg)))
	framed = append(framed, msg...)
	for name, tc := range map[string]struct {
		in   []byte
		want bool
	}{
		"message":     {msg, true},
		"delimited":   {framed, true},
		"json":        {[]byte(`{"resourceSpans":[]}`), false},
		"text":        {[]byte("hello"), false},
		"zero length": {[]byte{0, 0, 0, 0, 0x0a}, false},
		"empty":       {nil, false},
	} {
		if got := otlpproto.Sniff(tc.in); got != tc.want {
			t.Errorf("%s: Sniff = %t", name, got)
		}
	}
}
