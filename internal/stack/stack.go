// Package stack runs a whole scenario in one process: the simulated engine
// instances, the instrumented gateway in front of them, and the load
// generator. The demo, the end-to-end tests and the accuracy benchmark use
// it; every part listens on loopback only.
package stack

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/tokentrace/tokentrace/instrument"
	"github.com/tokentrace/tokentrace/internal/balancer"
	"github.com/tokentrace/tokentrace/internal/loadgen"
	"github.com/tokentrace/tokentrace/internal/scenario"
	"github.com/tokentrace/tokentrace/internal/sim"
)

// Options configures Start.
type Options struct {
	Scenario scenario.Scenario
	// TracerProvider receives the gateway's spans (required).
	TracerProvider trace.TracerProvider
	// Truth receives the engines' ground-truth JSONL (nil: kept in memory).
	Truth io.Writer
	// Progress is passed to the load generator (a terminal shows a bar).
	Progress io.Writer
	// EngineEvents makes the in-process engines report prefills,
	// preemptions and GC pauses to the gateway's tracker (default true via
	// DefaultOptions; the out-of-process setup cannot).
	EngineEvents bool
	Log          *slog.Logger
}

// Stack is a running scenario.
type Stack struct {
	Scenario   scenario.Scenario
	Engines    []*sim.Engine
	EngineURLs []string
	GatewayURL string
	Tracker    *instrument.Tracker
	Truth      *sim.TruthWriter

	cancel  context.CancelFunc
	servers []*http.Server
	stopGC  func()
}

// Start starts the engines and the gateway.
func Start(ctx context.Context, o Options) (*Stack, error) {
	if o.TracerProvider == nil {
		return nil, errors.New("stack: no tracer provider")
	}
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	ctx, cancel := context.WithCancel(ctx)
	s := &Stack{Scenario: o.Scenario, Tracker: instrument.NewTracker(), Truth: sim.NewTruthWriter(o.Truth), cancel: cancel}
	var ups []*url.URL
	for i := 0; i < o.Scenario.Instances; i++ {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			s.Close(context.Background())
			return nil, err
		}
		cfg := o.Scenario.EngineConfig(i)
		// The engine's instance name is what the gateway's Transport
		// calls it: the upstream host:port.
		cfg.Instance = ln.Addr().String()
		opts := []sim.Option{sim.WithTruth(s.Truth)}
		if o.EngineEvents {
			opts = append(opts, sim.WithTracker(s.Tracker))
		}
		e, err := sim.New(cfg, opts...)
		if err != nil {
			ln.Close()
			s.Close(context.Background())
			return nil, err
		}
		go e.Run(ctx)
		s.Engines = append(s.Engines, e)
		s.serve(ln, sim.NewServer(e))
		u := &url.URL{Scheme: "http", Host: ln.Addr().String()}
		ups = append(ups, u)
		s.EngineURLs = append(s.EngineURLs, u.String())
	}
	s.stopGC = s.Tracker.WatchGoGC(0, 0)
	tp := instrument.WithTracerProvider(o.TracerProvider)
	tr := instrument.WithTracker(s.Tracker)
	proxy, err := balancer.New(ups, instrument.Transport(http.DefaultTransport, tp, tr), o.Log)
	if err != nil {
		s.Close(context.Background())
		return nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		s.Close(context.Background())
		return nil, err
	}
	s.serve(ln, instrument.Handler(proxy, tp, tr, instrument.WithClassifier(ClassifyBySize)))
	s.GatewayURL = "http://" + ln.Addr().String()
	return s, nil
}

// ClassifyBySize labels requests by prompt size, the way a gateway without
// better knowledge would: short prompts are "qa", long ones "analysis".
func ClassifyBySize(_ *http.Request, info instrument.RequestInfo) instrument.Classification {
	pt := "qa"
	switch {
	case info.PromptChars >= 4*1000:
		pt = "long-prompt"
	case info.PromptChars >= 4*100:
		pt = "analysis"
	}
	return instrument.Classification{PromptType: pt, ModelVersion: info.Model + "@sim"}
}

func (s *Stack) serve(ln net.Listener, h http.Handler) {
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	s.servers = append(s.servers, srv)
	go func() { _ = srv.Serve(ln) }()
}

// RunLoad sends the scenario's load through the gateway.
func (s *Stack) RunLoad(ctx context.Context, progress io.Writer) (*loadgen.Result, error) {
	cfg := s.Scenario.LoadConfig(s.GatewayURL)
	cfg.Progress = progress
	return loadgen.Run(ctx, cfg)
}

// Close stops the gateway and the engines; spans of ended requests are
// flushed with instrument.Flush.
func (s *Stack) Close(ctx context.Context) error {
	var errs []error
	for _, srv := range s.servers {
		if err := srv.Shutdown(ctx); err != nil {
			errs = append(errs, fmt.Errorf("stack: shutdown: %w", err))
		}
	}
	if s.stopGC != nil {
		s.stopGC()
	}
	s.cancel()
	for _, e := range s.Engines {
		e.Wait()
	}
	errs = append(errs, instrument.Flush(ctx))
	return errors.Join(errs...)
}
