package source_test

import (
	"context"
	"fmt"
	"log"

	"github.com/tokentrace/tokentrace/analyzer/model"
	"github.com/tokentrace/tokentrace/analyzer/source"
)

// Read a Collector file export and a Jaeger UI download, whatever their
// names say, and turn their tokentrace spans into requests. The same
// request in both files is read once; vLLM's own span is not a tokentrace
// span and is counted as skipped.
func ExampleFiles() {
	skips := &source.Skips{}
	src := source.Files([]string{"testdata/trace.otlp.jsonl", "testdata/trace.jaeger.json"}, skips)
	err := source.Requests(context.Background(), src, skips, func(r *model.Request) error {
		tpot, _ := r.TPOT()
		fmt.Printf("%s %s: %d tokens (times from %s), TTFT %v, TPOT %v, %d engine events\n",
			r.TraceID[:8], r.Service, r.TokenCount(), r.TimesFrom, r.TTFT(), tpot, len(r.Events))
		return nil
	})
	if err != nil {
		log.Fatal(err)
	}
	for _, s := range skips.List() {
		fmt.Printf("skipped %d: %s\n", s.Count, s.Reason)
	}
	// Output:
	// 4bf92f35 llm-gateway: 4 tokens (times from events), TTFT 120ms, TPOT 93.333333ms, 1 engine events
	// 5b8efff7 llm-gateway: 2 tokens (times from compact), TTFT 200ms, TPOT 15ms, 0 engine events
	// skipped 3: duplicate span (trace and span id seen before)
	// skipped 1: not a tokentrace span
}
