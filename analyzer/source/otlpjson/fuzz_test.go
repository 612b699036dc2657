package otlpjson_test

import (
	"os"
	"testing"

	"github.com/tokentrace/tokentrace/analyzer/source/internal/decodetest"
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
	decodetest.Fuzz(f, otlpjson.Decode)
}
