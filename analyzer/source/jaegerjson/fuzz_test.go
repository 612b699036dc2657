package jaegerjson_test

import (
	"os"
	"testing"

	"github.com/tokentrace/tokentrace/analyzer/source/internal/decodetest"
	"github.com/tokentrace/tokentrace/analyzer/source/jaegerjson"
)

// FuzzJaegerJSON: whatever the input, Decode never panics nor fails (the
// input is in memory: there is no I/O error), every span it yields passes
// the checks and converts without panicking, and the work is bounded by
// the input.
func FuzzJaegerJSON(f *testing.F) {
	b, err := os.ReadFile("../testdata/trace.jaeger.json")
	if err != nil {
		f.Fatal(err)
	}
	f.Add(b)
	f.Add([]byte(`[{"traceID":"1","spans":[{"spanID":"2","startTime":"1","duration":-1,"tags":[{"key":"span.kind","value":"server"},{"key":"error","type":"bool","value":"true"}],"logs":[{"timestamp":3,"fields":[{"key":"event","type":"string","value":"e"}]}],"process":{"serviceName":"s"}}]}]`))
	f.Add([]byte(`{"data":null,"errors":[{"code":404,"msg":"trace not found"}]}`))
	f.Add([]byte(`{"processes":{"p1":{"serviceName":1}},"spans":[{"traceID":"ff","spanID":"1","startTime":1e300,"duration":1e300}]}`))
	decodetest.Fuzz(f, jaegerjson.Decode)
}
