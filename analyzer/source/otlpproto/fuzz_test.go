package otlpproto_test

import (
	"os"
	"testing"

	"github.com/tokentrace/tokentrace/analyzer/source/internal/decodetest"
	"github.com/tokentrace/tokentrace/analyzer/source/otlpproto"
)

// FuzzOTLPProto: whatever the input, Decode never panics nor fails (the
// input is in memory: there is no I/O error), every span it yields passes
// the checks and converts without panicking, and the work is bounded by
// the input (a claimed length is not allocated before its bytes arrive).
func FuzzOTLPProto(f *testing.F) {
	for _, name := range []string{"trace.otlp.binpb", "trace.otlp.pb"} {
		b, err := os.ReadFile("../testdata/" + name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
		f.Add(b[:len(b)/2])
	}
	f.Add([]byte{0x7f, 0xff, 0xff, 0xff, 0x0a})
	f.Add([]byte{0x0a, 0xff, 0xff, 0xff, 0xff, 0x0f, 0x0a})
	decodetest.Fuzz(f, otlpproto.Decode)
}
