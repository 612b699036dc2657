package source_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tokentrace/tokentrace/analyzer/model"
	"github.com/tokentrace/tokentrace/analyzer/source"
	du "github.com/tokentrace/tokentrace/analyzer/source/internal/decodeutil"
	"github.com/tokentrace/tokentrace/analyzer/source/jaegerjson"
	"github.com/tokentrace/tokentrace/analyzer/source/otlpjson"
	"github.com/tokentrace/tokentrace/analyzer/source/otlpproto"
)

const (
	tidA = "4bf92f3577b34da6a3ce929d0e0e4736"
	tidB = "5b8efff798038103d269b633813fc60c"
)

// otlpSpan is one OTLP JSON span of a tokentrace request; extra is
// appended to its fields (a later duplicate key wins in encoding/json).
func otlpSpan(tid, sid, extra string) string {
	return fmt.Sprintf(`{"traceId":%q,"spanId":%q,"name":"chat m","kind":2,`+
		`"startTimeUnixNano":"1700000000000000000","endTimeUnixNano":"1700000000500000000",`+
		`"attributes":[{"key":"tokentrace.schema","value":{"stringValue":"tokentrace/1"}},{"key":"tokentrace.tokens","value":{"intValue":"2"}}],`+
		`"events":[{"timeUnixNano":"1700000000100000000","name":"tokentrace.token","attributes":[{"key":"tokentrace.token.index","value":{"intValue":"0"}}]},`+
		`{"timeUnixNano":"1700000000120000000","name":"tokentrace.token","attributes":[{"key":"tokentrace.token.index","value":{"intValue":"1"}}]}]%s}`, tid, sid, extra)
}

// otlpLine is one line of the Collector's file exporter holding spans.
func otlpLine(spans ...string) string {
	return `{"resourceSpans":[{"resource":{"attributes":[{"key":"service.name","value":{"stringValue":"gw"}}]},"scopeSpans":[{"scope":{"name":"x"},"spans":[` +
		strings.Join(spans, ",") + `]}]}]}`
}

// jaegerTrace is a Jaeger UI trace with the given spans (processID p1).
func jaegerTrace(tid string, spans ...string) string {
	return fmt.Sprintf(`{"traceID":%q,"spans":[%s],"processes":{"p1":{"serviceName":"gw","tags":[]}},"warnings":null}`, tid, strings.Join(spans, ","))
}

func jaegerSpan(tid, sid, extra string) string {
	return fmt.Sprintf(`{"traceID":%q,"spanID":%q,"operationName":"chat m","references":[],"startTime":1700000000000000,"duration":500000,`+
		`"tags":[{"key":"tokentrace.schema","type":"string","value":"tokentrace/1"},{"key":"span.kind","type":"string","value":"server"}],`+
		`"logs":[{"timestamp":1700000000100000,"fields":[{"key":"event","type":"string","value":"tokentrace.token"},{"key":"tokentrace.token.index","type":"int64","value":0}]}],`+
		`"processID":"p1","warnings":null%s}`, tid, sid, extra)
}

func protoFrame(msgs ...[]byte) []byte {
	var out []byte
	for _, m := range msgs {
		out = binary.BigEndian.AppendUint32(out, uint32(len(m)))
		out = append(out, m...)
	}
	return out
}

func gz(b []byte) []byte {
	var buf bytes.Buffer
	w := gzip.NewWriter(&buf)
	_, _ = w.Write(b)
	_ = w.Close()
	return buf.Bytes()
}

type decoded struct {
	spans []*model.Span
	reqs  []*model.Request
	skips *source.Skips
	err   error
}

// decodeFiles writes the files into a fresh directory and decodes them in
// the order given, spans and then requests.
func decodeFiles(t *testing.T, files ...[2]string) decoded {
	t.Helper()
	dir := t.TempDir()
	var paths []string
	for _, f := range files {
		p := filepath.Join(dir, f[0])
		if err := os.WriteFile(p, []byte(f[1]), 0o644); err != nil {
			t.Fatal(err)
		}
		paths = append(paths, p)
	}
	var d decoded
	d.skips = &source.Skips{}
	src := source.Files(paths, d.skips)
	d.err = src.Spans(context.Background(), func(s *model.Span) error {
		d.spans = append(d.spans, source.Clone(s))
		return nil
	})
	if d.err == nil {
		// Again for the requests, counting the decoders' skips and the
		// conversion's in one Skips.
		d.skips = &source.Skips{}
		d.err = source.Requests(context.Background(), source.Files(paths, d.skips), d.skips, func(r *model.Request) error {
			d.reqs = append(d.reqs, r)
			return nil
		})
	}
	return d
}

func file(name, content string) [2]string { return [2]string{name, content} }

func TestBadInput(t *testing.T) {
	good1, good2 := otlpSpan(tidA, "00f067aa0ba902b7", ""), otlpSpan(tidB, "eee19b7ec3c1b174", "")
	bigProto := func() []byte {
		var b []byte
		b = binary.BigEndian.AppendUint32(b, 100)
		return append(b, 0x0a, 0x05, 0x01)
	}
	tests := []struct {
		name      string
		files     [][2]string
		wantSpans int
		wantReqs  int
		// wantSkips: reason → example prefix ("" to only count)
		wantSkips map[string]string
		wantCount map[string]int
		wantErr   string
	}{
		{
			name:      "truncated last line",
			files:     [][2]string{file("t.jsonl", otlpLine(good1)+"\n"+otlpLine(good2)[:200])},
			wantSpans: 1, wantReqs: 1,
			wantSkips: map[string]string{otlpjson.ReasonMalformedLine: "t.jsonl:2: unexpected EOF"},
		},
		{
			name:      "non-JSON line among good ones",
			files:     [][2]string{file("t.jsonl", otlpLine(good1)+"\nhello world\n"+otlpLine(good2)+"\n")},
			wantSpans: 2, wantReqs: 2,
			wantSkips: map[string]string{otlpjson.ReasonMalformedLine: "t.jsonl:2: invalid character 'h'"},
		},
		{
			name:      "CRLF lines and blank lines",
			files:     [][2]string{file("t.jsonl", "\r\n"+otlpLine(good1)+"\r\n\r\n"+otlpLine(good2)+"\r\n")},
			wantSpans: 2, wantReqs: 2,
		},
		{
			name: "wrong field types skip the span, not the line",
			files: [][2]string{file("t.jsonl", otlpLine(good1, otlpSpan(tidB, "eee19b7ec3c1b174", `,"name":5`))+"\n"+
				otlpLine(otlpSpan(tidB, "1111111111111111", `,"startTimeUnixNano":true`), otlpSpan(tidB, "2222222222222222", `,"events":{}`))+"\n")},
			wantSpans: 1, wantReqs: 1,
			wantSkips: map[string]string{otlpjson.ReasonSpanTypes: "t.jsonl:1: trace " + tidB + ": json: cannot unmarshal number"},
			wantCount: map[string]int{otlpjson.ReasonSpanTypes: 3},
		},
		{
			name:      "wrong structure",
			files:     [][2]string{file("t.jsonl", `{"resourceSpans":"x"}`+"\n"+`{"resourceSpans":[{"scopeSpans":[{"spans":{"a":1}}]}]}`+"\n"+`[1]`+"\n"+otlpLine(good1)+"\n")},
			wantSpans: 1, wantReqs: 1,
			wantSkips: map[string]string{otlpjson.ReasonStructure: "t.jsonl:1: resourceSpans is a string, want an array"},
			wantCount: map[string]int{otlpjson.ReasonStructure: 3},
		},
		{
			name: "bad ids, times, durations",
			files: [][2]string{file("t.jsonl", otlpLine(
				otlpSpan("", "00f067aa0ba902b7", ""),
				otlpSpan("00000000000000000000000000000000", "00f067aa0ba902b7", ""),
				otlpSpan("zz", "00f067aa0ba902b7", ""),
				otlpSpan(tidA, "", ""),
				otlpSpan(tidA, "1111111111111111", `,"startTimeUnixNano":"0"`),
				otlpSpan(tidA, "2222222222222222", `,"endTimeUnixNano":"1600000000000000000"`),
				good1)+"\n")},
			wantSpans: 1, wantReqs: 1,
			wantSkips: map[string]string{
				du.ReasonNoTraceID:    `t.jsonl:1: traceId ""`,
				du.ReasonNoSpanID:     "t.jsonl:1: trace " + tidA,
				du.ReasonNoStart:      "t.jsonl:1: trace " + tidA,
				du.ReasonNegative:     "t.jsonl:1: trace " + tidA,
				source.ReasonUnusable: "",
			},
			wantCount: map[string]int{du.ReasonNoTraceID: 3, source.ReasonUnusable: 0},
		},
		{
			name:      "lenient encodings: numbers, names, base64 ids",
			files:     [][2]string{file("t.jsonl", otlpLine(`{"traceId":"S/kvNXezTaajzpKdDg5HNg==","spanId":"APBnqguqArc=","kind":"SPAN_KIND_SERVER","startTimeUnixNano":1700000000000000000,"endTimeUnixNano":"1700000000500000000","attributes":[{"key":"tokentrace.schema","value":{"stringValue":"tokentrace/1"}},{"key":"tokentrace.chunks","value":{"intValue":1}}],"events":[{"timeUnixNano":"1700000000100000000","name":"tokentrace.token","attributes":[{"key":"tokentrace.token.index","value":{"intValue":0}}]}],"status":{"code":"STATUS_CODE_ERROR"}}`)+"\n")},
			wantSpans: 1, wantReqs: 1,
		},
		{
			name:      "duplicate span within and across files",
			files:     [][2]string{file("a.jsonl", otlpLine(good1)+"\n"+otlpLine(good1, good2)+"\n"), file("b.json", `{"data":[`+jaegerTrace(tidA, jaegerSpan(tidA, "00f067aa0ba902b7", ""))+`]}`)},
			wantSpans: 2, wantReqs: 2,
			wantSkips: map[string]string{source.ReasonDuplicate: "a.jsonl: trace " + tidA + ": span 00f067aa0ba902b7"},
			wantCount: map[string]int{source.ReasonDuplicate: 2},
		},
		{
			name:      "empty and blank files",
			files:     [][2]string{file("empty.json", ""), file("blank.json", " \n\t\n"), file("t.jsonl", otlpLine(good1))},
			wantSpans: 1, wantReqs: 1,
			wantSkips: map[string]string{source.ReasonEmpty: filepath.Base("empty.json")},
			wantCount: map[string]int{source.ReasonEmpty: 2},
		},
		{
			name:    "unknown format",
			files:   [][2]string{file("t.jsonl", otlpLine(good1)), file("notes.txt", "hello, these are not traces\n")},
			wantErr: `notes.txt: unknown trace format (starts with "hello, these are not traces\n"): expected OTLP JSON`,
		},
		{
			name:    "JSON of another kind",
			files:   [][2]string{file("x.json", `{"kind":"metrics","points":[]}`)},
			wantErr: "x.json: unknown trace format (starts with \"{\\\"kind\\\":\\\"metrics\\\",\\\"points\\\":[]}\"): JSON, but neither OTLP (resourceSpans) nor Jaeger (data, traceID) keys",
		},
		{
			name:    "zstd",
			files:   [][2]string{file("x.zst", "\x28\xb5\x2f\xfd\x00\x00")},
			wantErr: "zstd-compressed: decompress it first",
		},
		{
			name:      "spans of other instrumentation and without tokens",
			files:     [][2]string{file("t.jsonl", otlpLine(`{"traceId":"`+tidA+`","spanId":"1111111111111111","name":"GET /","startTimeUnixNano":"1","endTimeUnixNano":"2"}`, otlpSpan(tidB, "2222222222222222", `,"events":[]`))+"\n")},
			wantSpans: 2, wantReqs: 1,
			wantSkips: map[string]string{source.ReasonNotTokentrace: "trace " + tidA + ": GET /"},
		},
		{
			name:      "newer schema major version",
			files:     [][2]string{file("t.jsonl", otlpLine(strings.Replace(good1, "tokentrace/1", "tokentrace/2", 1), good2)+"\n")},
			wantSpans: 2, wantReqs: 1,
			wantSkips: map[string]string{source.ReasonSchema: "trace " + tidA + ": tokentrace/2"},
		},
		{
			name:      "events out of order are sorted",
			files:     [][2]string{file("t.jsonl", otlpLine(otlpSpan(tidA, "00f067aa0ba902b7", `,"events":[{"timeUnixNano":"1700000000120000000","name":"tokentrace.token","attributes":[{"key":"tokentrace.token.index","value":{"intValue":"1"}}]},{"timeUnixNano":"1700000000100000000","name":"tokentrace.token","attributes":[{"key":"tokentrace.token.index","value":{"intValue":"0"}}]}]`))+"\n")},
			wantSpans: 1, wantReqs: 1,
		},
		{
			name:      "pretty document cut short",
			files:     [][2]string{file("t.json", "{\n  \"resourceSpans\": [\n"+otlpLine(good1)[len(`{"resourceSpans":[`):len(otlpLine(good1))-2]+",\n"+otlpLine(good2)[len(`{"resourceSpans":[`):300])},
			wantSpans: 1, wantReqs: 1,
			wantSkips: map[string]string{otlpjson.ReasonMalformedRest: "t.json:4: unexpected EOF"},
		},
		{
			name:      "api_v3 error answer",
			files:     [][2]string{file("v3.json", `{"error":{"httpCode":404,"message":"trace not found"}}`)},
			wantSkips: map[string]string{otlpjson.ReasonAPIError: `v3.json:1: {"httpCode":404,"message":"trace not found"}`},
		},
		{
			name:      "Jaeger: span with wrong types, truncated rest",
			files:     [][2]string{file("j.json", `{"data":[`+jaegerTrace(tidA, jaegerSpan(tidA, "00f067aa0ba902b7", ""), jaegerSpan(tidA, "1111111111111111", `,"startTime":"soon"`))+",\n"+jaegerTrace(tidB, jaegerSpan(tidB, "eee19b7ec3c1b174", ""))[:100])},
			wantSpans: 1, wantReqs: 1,
			wantSkips: map[string]string{
				jaegerjson.ReasonSpanTypes:     "j.json:1: trace " + tidA + ": cannot read an integer",
				jaegerjson.ReasonMalformedRest: "j.json:2: unexpected EOF",
			},
		},
		{
			name:      "Jaeger: error answer, bare array, single trace",
			files:     [][2]string{file("e.json", `{"data":null,"total":0,"limit":0,"offset":0,"errors":[{"code":404,"msg":"trace not found"}]}`), file("a.json", "["+jaegerTrace(tidA, jaegerSpan(tidA, "00f067aa0ba902b7", ""))+"]"), file("s.json", jaegerTrace(tidB, jaegerSpan(tidB, "eee19b7ec3c1b174", "")))},
			wantSpans: 2, wantReqs: 2,
			wantSkips: map[string]string{jaegerjson.ReasonAPIError: "e.json:1: 404 trace not found"},
		},
		{
			name:      "Jaeger: 64-bit trace ids and negative duration",
			files:     [][2]string{file("j.json", `{"data":[`+jaegerTrace("a3ce929d0e0e4736", jaegerSpan("a3ce929d0e0e4736", "f067aa0ba902b7", ""), jaegerSpan("a3ce929d0e0e4736", "1111111111111111", `,"duration":-5`))+`]}`)},
			wantSpans: 1, wantReqs: 1,
			wantSkips: map[string]string{du.ReasonNegative: "j.json:1: trace 0000000000000000a3ce929d0e0e4736"},
		},
		{
			name: "OTLP proto: malformed message, then truncated",
			files: [][2]string{file("t.binpb", string(protoFrame(
				protoMessage(t, fixtureTD()),
				[]byte{0x0a, 0x05, 0xff, 0xff, 0xff, 0xff, 0xff},
				protoMessage(t, fixtureTD()),
			))+"\x00\x00\x10\x00\x0a\x03")},
			wantSpans: 3, wantReqs: 2,
			wantSkips: map[string]string{
				otlpproto.ReasonMalformed:  "t.binpb: message 2: proto:",
				otlpproto.ReasonTruncated:  "t.binpb: message 4 of 4096 bytes cut at 2 at byte",
				source.ReasonDuplicate:     "t.binpb: trace " + tidA,
				source.ReasonNotTokentrace: "trace " + tidA + ": llm_request",
			},
			wantCount: map[string]int{source.ReasonDuplicate: 3},
		},
		{
			name:      "OTLP proto: claimed length past the end",
			files:     [][2]string{file("t.binpb", string(bigProto()))},
			wantSkips: map[string]string{otlpproto.ReasonTruncated: "t.binpb: message 1 of 100 bytes cut at 3 at byte 0"},
		},
		{
			name:      "gzip, and corrupt gzip",
			files:     [][2]string{file("a.gz", string(gz([]byte(otlpLine(good1)+"\n")))), file("b.gz", string(gz([]byte(otlpLine(good2) + "\n")))[:40])},
			wantSpans: 1, wantReqs: 1,
			// Nothing of b.gz inflates before the cut: it ends up empty.
			wantSkips: map[string]string{source.ReasonCorruptGzip: "b.gz: unexpected EOF", source.ReasonEmpty: "b.gz"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d := decodeFiles(t, tc.files...)
			if tc.wantErr != "" {
				if d.err == nil || !strings.Contains(d.err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want one containing %q", d.err, tc.wantErr)
				}
				var fe *source.FormatError
				if !errors.As(d.err, &fe) {
					t.Errorf("error %T is not a *FormatError", d.err)
				}
				return
			}
			if d.err != nil {
				t.Fatal(d.err)
			}
			if len(d.spans) != tc.wantSpans || len(d.reqs) != tc.wantReqs {
				t.Errorf("%d spans, %d requests; want %d, %d", len(d.spans), len(d.reqs), tc.wantSpans, tc.wantReqs)
			}
			// Every reason of wantSkips is counted once unless wantCount
			// says otherwise (0: must not appear); no other reason appears.
			for _, s := range d.skips.List() {
				if _, ok := tc.wantSkips[s.Reason]; !ok {
					t.Errorf("unexpected skip %+v", s)
				}
			}
			for reason, want := range tc.wantSkips {
				n, ok := tc.wantCount[reason]
				if !ok {
					n = 1
				}
				if got := d.skips.Count(reason); got != n {
					t.Errorf("skip %q counted %d, want %d; all: %+v", reason, got, n, d.skips.List())
					continue
				}
				for _, s := range d.skips.List() {
					// Examples name the file without its temporary directory.
					ex := strings.ReplaceAll(s.Example, filepath.Dir(firstPath(s.Example))+string(filepath.Separator), "")
					if s.Reason == reason && !strings.HasPrefix(ex, want) {
						t.Errorf("skip %q example %q, want prefix %q", s.Reason, ex, want)
					}
				}
			}
			for _, r := range d.reqs {
				for i := 1; i < len(r.Tokens); i++ {
					if r.Tokens[i].Index <= r.Tokens[i-1].Index {
						t.Errorf("tokens not sorted: %+v", r.Tokens)
					}
				}
			}
		})
	}
}

// firstPath returns the path at the start of an example ("/tmp/x/a.json:3: ...").
func firstPath(ex string) string {
	if i := strings.IndexAny(ex, ": "); i > 0 {
		return ex[:i]
	}
	return ex
}

// A line, span or trace over the size limit is a skip, not an error,
// and what follows still decodes.
func TestBadInputOversized(t *testing.T) {
	old := du.MaxValueBytes
	du.MaxValueBytes = 4 << 10
	defer func() { du.MaxValueBytes = old }()
	pad := `,"attributes":[{"key":"pad","value":{"stringValue":"` + strings.Repeat("x", 6<<10) + `"}},{"key":"tokentrace.schema","value":{"stringValue":"tokentrace/1"}}]`
	huge := otlpSpan(tidB, "eee19b7ec3c1b174", pad)
	good := otlpSpan(tidA, "00f067aa0ba902b7", "")

	d := decodeFiles(t, file("lines.jsonl", otlpLine(huge)+"\n"+otlpLine(good)+"\n"))
	if d.err != nil || len(d.reqs) != 1 || d.skips.Count(otlpjson.ReasonLineTooLong) != 1 {
		t.Errorf("lines: err %v, %d requests, skips %+v", d.err, len(d.reqs), d.skips.List())
	}
	d = decodeFiles(t, file("doc.json", "{\n\"resourceSpans\": [\n"+otlpLine(good, huge)[len(`{"resourceSpans":[`):]+"\n"))
	if d.err != nil || len(d.reqs) != 1 || d.skips.Count(otlpjson.ReasonSpanTooLong) != 1 {
		t.Errorf("document: err %v, %d requests, skips %+v", d.err, len(d.reqs), d.skips.List())
	}
	jhuge := jaegerSpan(tidB, "eee19b7ec3c1b174", `,"warnings":["`+strings.Repeat("w", 6<<10)+`"]`)
	d = decodeFiles(t, file("j.json", `{"data":[`+jaegerTrace(tidA, jaegerSpan(tidA, "00f067aa0ba902b7", ""))+","+jaegerTrace(tidB, jhuge)+"]}"))
	if d.err != nil || len(d.reqs) != 1 || d.skips.Count(jaegerjson.ReasonTraceTooLarge) != 1 {
		t.Errorf("jaeger: err %v, %d requests, skips %+v", d.err, len(d.reqs), d.skips.List())
	}
	big := protoFrame(protoMessage(t, fixtureTD()), make([]byte, 5<<10))
	binary.BigEndian.PutUint32(big[len(big)-5<<10-4:], 5<<10)
	big[len(big)-5<<10] = 0x0a
	d = decodeFiles(t, file("p.binpb", string(big)))
	if d.err != nil || len(d.reqs) != 2 || d.skips.Count(otlpproto.ReasonTooLarge) != 1 {
		t.Errorf("proto: err %v, %d requests, skips %+v", d.err, len(d.reqs), d.skips.List())
	}
}

type failingReader struct {
	data []byte
	err  error
}

func (f *failingReader) Read(p []byte) (int, error) {
	if len(f.data) == 0 {
		return 0, f.err
	}
	n := copy(p, f.data)
	f.data = f.data[n:]
	return n, nil
}

// I/O errors stop a Source and are returned, naming the input; so are the
// visitor's own errors (as they are) and a cancelled context.
func TestErrorsStop(t *testing.T) {
	disk := errors.New("disk on fire")
	good := otlpLine(otlpSpan(tidA, "00f067aa0ba902b7", ""), otlpSpan(tidB, "eee19b7ec3c1b174", "")) + "\n"
	inputs := map[string][]byte{
		"otlp-json-lines": []byte(good + good[:50]),
		"otlp-json-doc":   []byte("{\n\"resourceSpans\": [\n" + good[len(`{"resourceSpans":[`):len(good)/2]),
		"jaeger":          []byte(`{"data":[` + jaegerTrace(tidA, jaegerSpan(tidA, "00f067aa0ba902b7", "")) + ",\n"),
		"proto":           protoFrame(protoMessage(t, fixtureTD()), protoMessage(t, fixtureTD()))[:3000],
		"proto-message":   protoMessage(t, fixtureTD())[:1500],
	}
	for name, data := range inputs {
		t.Run(name, func(t *testing.T) {
			src := source.Reader(name, &failingReader{data: data, err: disk}, nil)
			err := src.Spans(context.Background(), func(*model.Span) error { return nil })
			if !errors.Is(err, disk) || !strings.Contains(err.Error(), name) {
				t.Errorf("error %v, want %v naming %s", err, disk, name)
			}
		})
	}
	stop := errors.New("enough")
	n := 0
	err := source.Reader("x", strings.NewReader(good+good), nil).Spans(context.Background(), func(*model.Span) error {
		n++
		return stop
	})
	if err != stop || n != 1 {
		t.Errorf("visitor error: got %v after %d spans, want %v after 1", err, n, stop)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	err = source.Reader("x", strings.NewReader(good), nil).Spans(ctx, func(*model.Span) error { return nil })
	if !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: %v", err)
	}
	err = source.Files([]string{filepath.Join(t.TempDir(), "missing.json")}, nil).Spans(context.Background(), func(*model.Span) error { return nil })
	if !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing file: %v", err)
	}
	var rerr error
	err = source.Requests(context.Background(), source.Reader("x", strings.NewReader(good), nil), nil, func(*model.Request) error { return io.ErrShortWrite })
	if rerr = err; !errors.Is(rerr, io.ErrShortWrite) {
		t.Errorf("Requests: %v", err)
	}
}

func TestFilesDirectory(t *testing.T) {
	dir := t.TempDir()
	_ = os.WriteFile(filepath.Join(dir, "b.jsonl"), []byte(otlpLine(otlpSpan(tidB, "eee19b7ec3c1b174", ""))), 0o644)
	_ = os.WriteFile(filepath.Join(dir, "a.jsonl"), []byte(otlpLine(otlpSpan(tidA, "00f067aa0ba902b7", ""))), 0o644)
	_ = os.WriteFile(filepath.Join(dir, ".hidden"), []byte("not traces"), 0o644)
	var ids []string
	err := source.Files([]string{dir}, nil).Spans(context.Background(), func(s *model.Span) error {
		ids = append(ids, s.TraceID)
		return nil
	})
	if err != nil || len(ids) != 2 || ids[0] != tidA {
		t.Errorf("directory: err %v, traces %v (want a.jsonl first)", err, ids)
	}
}

func TestSkipsConcurrentAndNil(t *testing.T) {
	var nilSkips *source.Skips
	nilSkips.Add("x", "y")
	if nilSkips.List() != nil || nilSkips.Total() != 0 {
		t.Error("nil Skips not empty")
	}
	s := &source.Skips{}
	done := make(chan bool)
	for g := 0; g < 8; g++ {
		go func() {
			for i := 0; i < 100; i++ {
				s.Add(fmt.Sprintf("reason %d", i%3), fmt.Sprintf("ex %d", i))
			}
			done <- true
		}()
	}
	for g := 0; g < 8; g++ {
		<-done
	}
	l := s.List()
	if len(l) != 3 || s.Total() != 800 || l[0].Count != 272 || l[0].Reason != "reason 0" {
		t.Errorf("skips = %+v (total %d)", l, s.Total())
	}
}

func TestSupportedSchema(t *testing.T) {
	for v, want := range map[string]bool{"tokentrace/1": true, "tokentrace/1.3": true, "tokentrace/2": false, "tokentrace/0": false, "other/1": false, "": false} {
		if got := source.SupportedSchema(v); got != want {
			t.Errorf("SupportedSchema(%q) = %t", v, got)
		}
	}
}
