package otlpproto_test

import (
	"bytes"
	"os"
	"testing"

	"github.com/tokentrace/tokentrace/analyzer/model"
	du "github.com/tokentrace/tokentrace/analyzer/source/internal/decodeutil"
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
	old := du.MaxValueBytes
	du.MaxValueBytes = 1 << 20
	defer func() { du.MaxValueBytes = old }()
	f.Fuzz(func(t *testing.T, in []byte) {
		spans, skips := 0, 0
		err := otlpproto.Decode(bytes.NewReader(in), "fuzz", func(s *model.Span) error {
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
