package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/tokentrace/tokentrace/analyzer"
	"github.com/tokentrace/tokentrace/analyzer/report"
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
	var truthW io.Writer
	if *truth != "" {
		f, err := os.Create(*truth)
		if err != nil {
			return err
		}
		defer f.Close()
		truthW = f
	}

	// Spans stay in memory: the SDK's own recorder, with the event limit
	// the provider helper would set for Jaeger.
	rec := tracetest.NewSpanRecorder()
	limits := sdktrace.NewSpanLimits()
	limits.EventCountLimit = instrument.DefaultEventCountLimit
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec), sdktrace.WithRawSpanLimits(limits))
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

	cfg.Source = fmt.Sprintf("demo scenario %q (in-memory spans)", sc.Name)
	rpt, err := analyzer.Analyze(ctx, sdkspan.Spans(rec.Ended()), cfg)
	if err != nil {
		return err
	}
	return c.output(rpt, stdout, report.Options{Color: isTerminal(stdout)})
}
