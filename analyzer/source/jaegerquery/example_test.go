package jaegerquery_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"time"

	"github.com/tokentrace/tokentrace/analyzer/model"
	"github.com/tokentrace/tokentrace/analyzer/source"
	"github.com/tokentrace/tokentrace/analyzer/source/jaegerquery"
)

// The requests of one service over the last 15 minutes, for one model,
// from a Jaeger's gRPC query port (api_v3, or api_v2 on older servers).
func Example() {
	ctx := context.Background()
	skips := &source.Skips{}
	c, err := jaegerquery.New("grpc://localhost:16685",
		jaegerquery.WithSkips(skips),
		jaegerquery.WithProgress(os.Stderr), // a bar only on a terminal
	)
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()

	src := c.Source(jaegerquery.Query{
		Service:    "llm-gateway",
		Start:      time.Now().Add(-15 * time.Minute),
		Attributes: map[string]string{"model": "llama-3-8b"},
	})
	err = source.Requests(ctx, src, skips, func(r *model.Request) error {
		fmt.Println(r.TraceID, len(r.Tokens), "tokens")
		return nil
	})
	if err != nil {
		log.Fatal(err) // e.g. "jaeger query at grpc://localhost:16685 unreachable: ..."
	}
	for _, s := range skips.List() {
		fmt.Printf("skipped %d: %s (e.g. %s)\n", s.Count, s.Reason, s.Example)
	}
}

// Traces by id, over Jaeger's HTTP port, with a token.
func ExampleClient_Source_traceIDs() {
	c, err := jaegerquery.New("https://jaeger.example.com",
		jaegerquery.WithBearerToken(os.Getenv("JAEGER_TOKEN")),
		jaegerquery.WithTimeout(10*time.Second))
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	src := c.Source(jaegerquery.Query{TraceIDs: []string{"4bf92f3577b34da6a3ce929d0e0e4736"}})
	err = src.Spans(context.Background(), func(s *model.Span) error {
		fmt.Println(s.Name, len(s.Events), "events")
		return nil
	})
	if err != nil {
		log.Fatal(err) // a *jaegerquery.NotFoundError names the missing ids
	}
}
