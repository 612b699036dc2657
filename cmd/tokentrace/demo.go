package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/tokentrace/tokentrace/analyzer"
	"github.com/tokentrace/tokentrace/analyzer/model"
	"github.com/tokentrace/tokentrace/analyzer/report"
	"github.com/tokentrace/tokentrace/analyzer/source"
	"github.com/tokentrace/tokentrace/analyzer/source/jaegerquery"
	"github.com/tokentrace/tokentrace/analyzer/source/sdkspan"
	"github.com/tokentrace/tokentrace/instrument"
	"github.com/tokentrace/tokentrace/internal/scenario"
	"github.com/tokentrace/tokentrace/internal/stack"
)

func runDemo(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("demo", flag.ContinueOnError)
	var c common
	c.register(fs, "text")
	scen := fs.String("scenario", "mixed", "built-in scenario name or scenario JSON file ("+fmt.Sprint(scenario.Names())+")")
	scale := fs.Float64("time-scale", 0, "run the scenario this many times faster (0: the scenario's own)")
	requests := fs.Int("requests", 0, "override the scenario's request count (0: the scenario's own)")
	truth := fs.String("truth", "", "write the simulator's ground truth (JSONL) to this file")
	otlp := fs.String("jaeger-otlp", "", "also export the spans over OTLP gRPC to this Jaeger (host:4317), then analyse what --jaeger pulls back")
	if err := parse(fs, args); err != nil {
		return helpOr(err, fs, stdout, "demo [flags]")
	}
	cfg, err := c.config()
	if err != nil {
		return err
	}
	sc, err := scenario.Open(*scen)
	if err != nil {
		return usageError{err.Error()}
	}
	if *scale > 0 {
		sc.TimeScale = 1 / *scale
	}
	if *requests > 0 {
		sc.Load.Requests = *requests
	}
	// The scenario knows how many requests of each engine are cold: the
	// warmth groups then compare its cold start with the rest, unless
	// --cold says otherwise.
	coldSet := false
	fs.Visit(func(f *flag.Flag) { coldSet = coldSet || f.Name == "cold" })
	if !coldSet && sc.Engine.Warmup.Requests > 0 {
		cfg.Stats.ColdRequests = sc.Engine.Warmup.Requests
	}
	var truthW io.Writer
	if *truth != "" {
		f, err := os.Create(*truth)
		if err != nil {
			return err
		}
		defer f.Close()
		truthW = f
	}

	if (*otlp == "") != (c.jaeger == "") {
		return usageError{"demo: give both --jaeger-otlp (where spans go) and --jaeger (where they are read back), or neither"}
	}
	// Spans stay in memory: the SDK's own recorder, with the event limit
	// the provider helper would set for Jaeger.
	rec, popts := stack.Recorder()
	service := "tokentrace-demo"
	if *otlp != "" {
		exp, err := otlptracegrpc.New(ctx, otlptracegrpc.WithEndpoint(*otlp), otlptracegrpc.WithInsecure())
		if err != nil {
			return err
		}
		res, _ := resource.Merge(resource.Default(), resource.NewSchemaless(attribute.String("service.name", service)))
		popts = append(popts, sdktrace.WithResource(res), sdktrace.WithBatcher(exp,
			sdktrace.WithMaxExportBatchSize(instrument.DefaultMaxExportBatchSize), sdktrace.WithBatchTimeout(instrument.DefaultBatchTimeout)))
	}
	tp := sdktrace.NewTracerProvider(popts...)
	defer tp.Shutdown(context.Background())

	fmt.Fprintf(stderr, "demo: scenario %q — %s\n", sc.Name, sc.Description)
	fmt.Fprintf(stderr, "demo: %d simulated engine instance(s) (%s profile), instrumented gateway, %d requests at %.1f/s\n",
		sc.Instances, sc.Engine.Profile, sc.Load.Requests, sc.Load.Rate/sc.TimeScale)
	st, err := stack.Start(ctx, stack.Options{Scenario: sc, TracerProvider: tp, Truth: truthW, EngineEvents: true})
	if err != nil {
		return err
	}
	t0 := time.Now()
	res, err := st.RunLoad(ctx, stderr)
	closeErr := st.Close(context.Background())
	if err != nil {
		return err
	}
	if closeErr != nil {
		return closeErr
	}
	sum := res.Summary()
	fmt.Fprintf(stderr, "demo: %d requests done in %.1fs (%d failed); analysing %d spans\n\n",
		sum.Successful+sum.Failed, time.Since(t0).Seconds(), sum.Failed, len(rec.Ended()))

	var src source.Source = sdkspan.Spans(rec.Ended())
	cfg.Source = fmt.Sprintf("demo scenario %q (in-memory spans)", sc.Name)
	if *otlp != "" {
		if err := tp.ForceFlush(ctx); err != nil {
			return fmt.Errorf("demo: exporting to %s: %w", *otlp, err)
		}
		cl, err := c.jaegerClient(stderr)
		if err != nil {
			return err
		}
		defer cl.Close()
		q := jaegerquery.Query{Service: service, Start: t0.Add(-time.Minute), End: time.Now().Add(time.Minute), Limit: c.limit}
		if err := waitForSpans(ctx, cl, q, len(rec.Ended())); err != nil {
			return err
		}
		src, cfg.Skips = cl.Source(q), c.skips
		cfg.Source = fmt.Sprintf("demo scenario %q, read back from Jaeger %s", sc.Name, cl.Endpoint())
	}
	rpt, err := analyzer.Analyze(ctx, src, cfg)
	if err != nil {
		return err
	}
	return c.output(rpt, stdout, report.Options{Color: isTerminal(stdout)})
}

// waitForSpans polls Jaeger until it has want spans for q (Jaeger writes
// what it receives asynchronously), or gives up after a minute.
func waitForSpans(ctx context.Context, cl *jaegerquery.Client, q jaegerquery.Query, want int) error {
	deadline := time.Now().Add(time.Minute)
	for {
		n := 0
		err := cl.Source(q).Spans(ctx, func(*model.Span) error { n++; return nil })
		if err == nil && n >= want {
			return nil
		}
		if time.Now().After(deadline) {
			if err != nil {
				return err
			}
			return fmt.Errorf("demo: Jaeger %s has %d of the %d spans after a minute", cl.Endpoint(), n, want)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(500 * time.Millisecond):
		}
	}
}
