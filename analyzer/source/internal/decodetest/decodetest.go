// Package decodetest holds what the trace-file decoders' tests share: the
// properties every decoder must keep whatever bytes it is given.
package decodetest

import (
	"bytes"
	"io"
	"testing"

	"github.com/tokentrace/tokentrace/analyzer/model"
	du "github.com/tokentrace/tokentrace/analyzer/source/internal/decodeutil"
)

// Decoder is the signature of the file decoders (otlpjson.Decode,
// otlpproto.Decode, jaegerjson.Decode).
type Decoder func(r io.Reader, name string, visit func(*model.Span) error, skip func(reason, example string)) error

// Fuzz fuzzes decode from the seeds already added to f: it never fails on
// bytes (bad records are skips, only I/O errors are errors), every span it
// visits passes decodeutil.Check and survives model.FromSpan, every skip
// has a reason and a bounded example, and it makes no more spans and
// skips than there are input bytes. The value size limit is lowered to
// 1 MiB so that the fuzzer reaches the limit's paths.
func Fuzz(f *testing.F, decode Decoder) {
	old := du.MaxValueBytes
	du.MaxValueBytes = 1 << 20
	f.Cleanup(func() { du.MaxValueBytes = old })
	f.Fuzz(func(t *testing.T, in []byte) {
		spans, skips := 0, 0
		err := decode(bytes.NewReader(in), "fuzz", func(s *model.Span) error {
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
