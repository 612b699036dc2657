package accuracy

import (
	"context"
	"fmt"
	"path/filepath"
	"sort"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/tokentrace/tokentrace/analyzer"
	"github.com/tokentrace/tokentrace/analyzer/report"
	"github.com/tokentrace/tokentrace/analyzer/source/sdkspan"
	"github.com/tokentrace/tokentrace/internal/replay"
	"github.com/tokentrace/tokentrace/internal/scenario"
	"github.com/tokentrace/tokentrace/internal/stack"
)

// Case is the outcome of one scenario or recording.
type Case struct {
	Name     string
	Score    Score
	Baseline Score // the no-change detector
	Report   *report.Report
	Truth    Truth
	// ReplayLateP99 is how late a replay wrote its tokens (P99): above a
	// few milliseconds the host was too busy to reproduce real timing.
	ReplayLateP99 time.Duration
}

func recorder() (*sdktrace.TracerProvider, *tracetest.SpanRecorder) {
	rec, opts := stack.Recorder()
	return sdktrace.NewTracerProvider(opts...), rec
}

// Scenario runs a simulator scenario through the instrumented gateway,
// analyses the spans and scores the report against the engine's truth.
func Scenario(ctx context.Context, sc scenario.Scenario, cfg analyzer.Config) (*Case, error) {
	tp, rec := recorder()
	defer tp.Shutdown(context.Background())
	st, err := stack.Start(ctx, stack.Options{Scenario: sc, TracerProvider: tp, EngineEvents: true})
	if err != nil {
		return nil, err
	}
	res, err := st.RunLoad(ctx, nil)
	if cerr := st.Close(context.Background()); err == nil {
		err = cerr
	}
	if err != nil {
		return nil, err
	}
	if sum := res.Summary(); sum.Failed > 0 {
		return nil, fmt.Errorf("scenario %s: %d requests failed: %v", sc.Name, sum.Failed, sum.Errors)
	}
	truth := Truth{}
	for _, r := range st.Truth.Records() {
		segs := []Segment{}
		for _, s := range r.Segments {
			segs = append(segs, Segment{s.StartToken, s.EndToken, s.Cause})
		}
		truth[r.TraceID] = segs
	}
	cfg.Source = "scenario " + sc.Name
	rpt, err := analyzer.Analyze(ctx, sdkspan.Spans(rec.Ended()), cfg)
	if err != nil {
		return nil, err
	}
	return &Case{Name: sc.Name, Score: Evaluate(truth, rpt), Baseline: NoChange(truth), Report: rpt, Truth: truth}, nil
}

// Recording replays a real-engine recording through the instrumented
// gateway, analyses the spans and scores them against the recording's truth.
func Recording(ctx context.Context, path string, cfg analyzer.Config) (*Case, error) {
	rec, err := replay.Load(path)
	if err != nil {
		return nil, err
	}
	tp, spans := recorder()
	defer tp.Shutdown(context.Background())
	res, err := replay.Play(ctx, rec, tp)
	if err != nil {
		return nil, err
	}
	truth := Truth{}
	for _, ts := range rec.Truth.Streams {
		id := res.TraceIDs[ts.Name]
		if id == "" {
			return nil, fmt.Errorf("%s: stream %s has no trace", path, ts.Name)
		}
		segs := []Segment{}
		for _, s := range ts.Segments {
			segs = append(segs, Segment{s.StartToken, s.EndToken, s.Cause})
		}
		truth[id] = segs
	}
	cfg.Source = filepath.Base(path)
	rpt, err := analyzer.Analyze(ctx, sdkspan.Spans(spans.Ended()), cfg)
	if err != nil {
		return nil, err
	}
	return &Case{Name: rec.Scenario, Score: Evaluate(truth, rpt), Baseline: NoChange(truth), Report: rpt, Truth: truth,
		ReplayLateP99: res.LatenessP99}, nil
}

// Total sums the scores of cases, in name order.
func Total(cases []*Case) (Score, Score) {
	sort.Slice(cases, func(i, j int) bool { return cases[i].Name < cases[j].Name })
	var s, b Score
	for _, c := range cases {
		s, b = s.Add(c.Score), b.Add(c.Baseline)
	}
	return s, b
}
