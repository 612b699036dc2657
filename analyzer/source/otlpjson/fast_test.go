package otlpjson

import (
	"bytes"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/tokentrace/tokentrace/analyzer/model"
)

// run decodes in and renders what was visited and skipped, skips sorted
// (the two paths may report them in another order).
func run(t *testing.T, in []byte, slow bool) (spans []string, skips []string) {
	slowOnly = slow
	defer func() { slowOnly = false }()
	err := Decode(bytes.NewReader(in), "f", func(s *model.Span) error {
		spans = append(spans, fmt.Sprintf("%#v", *s))
		return nil
	}, func(reason, example string) { skips = append(skips, reason+" @ "+example) })
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(skips)
	return spans, skips
}

func lineSeeds(f *testing.F) {
	b, err := os.ReadFile("../testdata/trace.otlp.jsonl")
	if err != nil {
		f.Fatal(err)
	}
	f.Add(b)
	line := strings.SplitN(string(b), "\n", 2)[0]
	for _, mut := range []func(string) string{
		func(s string) string { return strings.Replace(s, `"traceId"`, `"TraceId"`, 1) },
		func(s string) string { return strings.Replace(s, `"name":"chat llama-3-8b"`, `"name":5`, 1) },
		func(s string) string {
			return strings.Replace(s, `"kind":2`, `"kind":"SPAN_KIND_CLIENT","kind":null`, 1)
		},
		func(s string) string { return strings.Replace(s, `{"resource":`, `{"scopeSpans":[],"resource":`, 1) },
		func(s string) string { return strings.Replace(s, `"stringValue":"llm-gateway"`, `"stringValue":7`, 1) },
		func(s string) string { return strings.Replace(s, `"intValue":"512"`, `"intValue":512.0`, 1) },
		func(s string) string { return strings.Replace(s, `"chat"`, `"ch\u0061t\ud83d"`, 1) },
		func(s string) string { return `{"result":` + s + `,"x":null}` },
		func(s string) string { return "[" + s + "," + s + "]" },
	} {
		f.Add([]byte(mut(line) + "\n"))
	}
}

// FuzzFastPath: the fast path for line files decodes exactly what the
// streaming decoder decodes, spans and skips alike.
func FuzzFastPath(f *testing.F) {
	lineSeeds(f)
	f.Fuzz(func(t *testing.T, in []byte) {
		fastSpans, fastSkips := run(t, in, false)
		slowSpans, slowSkips := run(t, in, true)
		if !slices.Equal(fastSpans, slowSpans) {
			t.Fatalf("spans differ:\nfast %q\nslow %q", fastSpans, slowSpans)
		}
		if !slices.Equal(fastSkips, slowSkips) {
			t.Fatalf("skips differ:\nfast %q\nslow %q", fastSkips, slowSkips)
		}
	})
}
