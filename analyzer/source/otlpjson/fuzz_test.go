package otlpjson_test

import (
	"bytes"
	"os"
	"testing"

	"github.com/tokentrace/tokentrace/analyzer/model"
	du "github.com/tokentrace/tokentrace/analyzer/source/internal/decodeutil"
	"github.com/tokentrace/tokentrace/analyzer/source/otlpjson"
)

// FuzzOTLPJSON: whatever the input, Decode never panics nor fails (the
// input is in memory: there is no I/O error), every span it yields passes
// the checks and converts without panicking, and the work is bounded by
// the input (no more spans and skips than bytes).
func FuzzOTLPJSON(f *testing.F) {
	for _, name := range []string{"trace.otlp.jsonl", "trace.otlp.json", "trace.api-v3.json"} {
		b, err := os.ReadFile("../testdata/" + name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte(`{"resourceSpans":[{"scopeSpans":[{"spans":[{"traceId":"0102030405060708090a0b0c0d0e0f10","spanId":"0102030405060708","startTimeUnixNano":"5","endTimeUnixNano":5,"kind":"SPAN_KIND_SERVER","attributes":[{"key":"a","value":{"arrayValue":{"values":[{"kvlistValue":{"values":[]}}]}}}]}]}]}]}` + "\n{}\n[1]\n"))
	f.Add([]byte("{\n\"result\": {\"resourceSpans\": [{\"resource\": 5}]}}"))
	f.Add([]byte(`{"error":{"httpCode":404,"message":"not found"}}`))
	old := du.MaxValueBytes
	du.MaxValueBytes = 1 << 20
	defer func() { du.MaxValueBytes = old }()
	f.Fuzz(func(t *testing.T, in []byte) {
		spans, skips := 0, 0
		err := otlpjson.Decode(bytes.NewReader(in), "fuzz", func(s *model.Span) error {
			spans++
			if reason := du.Check(s); reason != "" {
				t.Fatalf("visited a span that fails its checks: %s", reason)
			}
			_, _ = model.FromSpan(s)
			return nil
		}, func(reason, example string) {
			skips++
			if reason == "" || len(example) > du.MaxExample {
				t.Fatalf("bad skip %q %q", reason, example)
			}
		})
		if err != nil {
			t.Fatalf("Decode: %v", err)
		}
		if spans+skips > len(in)+1 {
			t.Fatalf("%d spans and %d skips from %d bytes", spans, skips, len(in))
		}
	})
}
