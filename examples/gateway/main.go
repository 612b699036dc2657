// Command gateway is a small LLM gateway instrumented with tokentrace: a
// reverse proxy to one or more OpenAI-compatible engines (vLLM, SGLang,
// llama.cpp's server, or examples/engine) in which every streamed
// completion becomes one OpenTelemetry span with an event per output
// token, exported over OTLP to Jaeger or a collector.
//
//	go run ./examples/gateway -upstream http://127.0.0.1:8000 -otlp localhost:4317
//
// Several -upstream engines (repeated, or comma-separated) are served round
// robin. It prints "listening on ADDR" as its first line on stdout and logs
// to stderr. On SIGINT or SIGTERM it stops accepting connections, lets the
// streams in flight finish and sends their spans, all within
// -shutdown-timeout; a second signal kills it at once.
//
// Copy this file to instrument your own gateway. The proxy
// (internal/balancer) is a plain httputil.ReverseProxy with FlushInterval
// -1; use your own.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	otelprom "go.opentelemetry.io/otel/exporters/prometheus"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/resource"

	"github.com/tokentrace/tokentrace/instrument"
	"github.com/tokentrace/tokentrace/instrument/enginepoll"
	"github.com/tokentrace/tokentrace/internal/balancer"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	go func() { <-ctx.Done(); stop() }() // a second signal kills at once
	err := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "gateway:", err)
		os.Exit(1)
	}
}

// run is the whole gateway: it serves until ctx is done, then shuts down.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("gateway", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var (
		listen          = fs.String("listen", "127.0.0.1:8080", "address to serve clients on")
		upstreams       upstreamList
		otlpEndpoint    = fs.String("otlp", instrument.DefaultOTLPEndpoint, "OTLP gRPC endpoint (host:port) of Jaeger or a collector")
		otlpInsecure    = fs.Bool("otlp-insecure", false, "send spans without TLS (always so to a loopback endpoint)")
		serviceName     = fs.String("service-name", "llm-gateway", "service.name of the spans")
		tokenRecording  = fs.String("token-recording", "both", "how token times are written: events (one span event per token), compact (tokentrace.token_times only) or both")
		shutdownTimeout = fs.Duration("shutdown-timeout", 30*time.Second, "on SIGINT/SIGTERM, the most the shutdown takes: streams in flight, then up to 5 s (a fifth) to send the last spans")
		metricsListen   = fs.String("metrics-listen", "127.0.0.1:9464", "address of the Prometheus /metrics endpoint (TTFT, TPOT, ITL, llm_tpot with exemplars); empty: off")
		pollEngines     = fs.Bool("poll-engines", true, "poll each upstream's /metrics (vLLM, SGLang) and put preemptions, KV-cache pressure and GC pauses on the spans of its requests")
		pollInterval    = fs.Duration("poll-interval", enginepoll.DefaultInterval, "how often -poll-engines reads an engine's /metrics")
		modelVersion    = fs.String("model-version", "", "model_version of the metrics and spans (e.g. the deployment's model build); default: the model requested")
	)
	fs.Var(&upstreams, "upstream", "engine base URL; repeat or comma-separate for several, served round robin (default http://127.0.0.1:8000)")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil
		}
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments: %q", fs.Args())
	}
	if len(upstreams) == 0 {
		_ = upstreams.Set("http://127.0.0.1:8000")
	}
	recording, err := parseRecording(*tokenRecording)
	if err != nil {
		return err
	}
	if *shutdownTimeout <= 0 {
		return errors.New("-shutdown-timeout must be > 0")
	}
	log := slog.New(slog.NewTextHandler(stderr, nil))
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		return err
	}
	defer ln.Close()

	// Spans go over OTLP gRPC. The exporter connects lazily and drops what
	// it cannot send, so an endpoint that is down never slows a request;
	// the SDK reports each failed export to the global error handler, which
	// logs the first one only.
	exportErrs := &errorLogger{log: log}
	otel.SetErrorHandler(exportErrs)
	providerOpts := []instrument.ProviderOption{
		instrument.WithEndpoint(*otlpEndpoint),
		instrument.WithServiceName(*serviceName),
	}
	if *otlpInsecure {
		providerOpts = append(providerOpts, instrument.WithInsecure())
	}
	tp, err := instrument.NewTracerProvider(ctx, providerOpts...)
	if err != nil {
		return err
	}
	// An endpoint that is down costs no request (the spans are dropped),
	// but say so now rather than at the first failed export, seconds on.
	checked := make(chan struct{})
	go func() {
		defer close(checked)
		if err := probe(ctx, *otlpEndpoint, 2*time.Second); err != nil && ctx.Err() == nil {
			log.Warn("OTLP endpoint not reachable: spans are dropped until it is (requests are not affected)",
				"otlp", *otlpEndpoint, "err", err)
		}
	}()
	defer func() { <-checked }()

	// One tracker for the Handler, the Transport and the GC watcher. The
	// Transport tells it which engine instance serves each request, so
	// that an event on an instance (another request's prefill, a
	// preemption, a pause) lands on the spans of exactly the requests
	// sharing that engine's batch; WatchGoGC puts this gateway's own GC
	// pauses on every request in flight. Separate trackers would each see
	// only part of the picture.
	tracker := instrument.NewTracker()
	stopGC := tracker.WatchGoGC(0, 0)
	defer stopGC()
	opts := []instrument.Option{
		instrument.WithTracker(tracker),
		instrument.WithTracerProvider(tp),
		instrument.WithTokenRecording(recording),
		instrument.WithClassifier(classifier(*modelVersion)),
	}

	// Metrics for dashboards and alerts, on a registry of their own, with
	// exemplars: a P99 spike in Grafana opens the slow request in Jaeger.
	var mp *sdkmetric.MeterProvider
	if *metricsListen != "" {
		// The per-token histograms (inter-token latency) are counted by a
		// TokenHistograms the exporter reads: a bucket lookup per token
		// instead of one SDK Record each.
		th := instrument.NewTokenHistograms()
		reg := prometheus.NewRegistry()
		exp, err := otelprom.New(otelprom.WithRegisterer(reg), otelprom.WithProducer(th))
		if err != nil {
			return errors.Join(err, tp.Shutdown(ctx))
		}
		res, err := resource.Merge(resource.Default(), resource.NewSchemaless(attribute.String("service.name", *serviceName)))
		if err != nil {
			return errors.Join(err, tp.Shutdown(ctx))
		}
		mp = sdkmetric.NewMeterProvider(sdkmetric.WithReader(exp), sdkmetric.WithResource(res))
		opts = append(opts, instrument.WithMeterProvider(mp), instrument.WithTokenHistograms(th))
		mln, err := net.Listen("tcp", *metricsListen)
		if err != nil {
			return errors.Join(err, tp.Shutdown(ctx))
		}
		msrv := &http.Server{Handler: promhttp.HandlerFor(reg, promhttp.HandlerOpts{EnableOpenMetrics: true}), ReadHeaderTimeout: 10 * time.Second}
		go func() { _ = msrv.Serve(mln) }()
		defer msrv.Close()
		log.Info("prometheus metrics", "listen", mln.Addr().String()+"/metrics")
	}

	// Real engines do not call the Tracker: read what they expose instead.
	if *pollEngines {
		for _, u := range upstreams {
			p, err := enginepoll.New(tracker, enginepoll.Config{URL: u.JoinPath("metrics").String(), Interval: *pollInterval, Logger: log})
			if err != nil {
				return errors.Join(err, tp.Shutdown(ctx))
			}
			stop := p.Start(ctx)
			defer stop()
		}
	}

	// Toward the engines: the Transport sends the W3C traceparent (so an
	// engine's own spans join the request's trace) and names the instance.
	engines := http.DefaultTransport.(*http.Transport).Clone()
	engines.MaxIdleConnsPerHost = 64 // streams are long: keep connections to the engines
	proxy, err := balancer.New(upstreams, instrument.Transport(engines, opts...), log)
	if err != nil {
		return errors.Join(err, tp.Shutdown(ctx))
	}
	// Toward the clients: the Handler makes the request's span and stamps
	// each token as its bytes are written to the client.
	srv := &http.Server{
		Handler:           instrument.Handler(proxy, opts...),
		ReadHeaderTimeout: 10 * time.Second,
	}
	fmt.Fprintf(stdout, "listening on %s\n", ln.Addr())
	log.Info("gateway ready", "listen", ln.Addr().String(), "upstreams", upstreams.String(),
		"otlp", *otlpEndpoint, "service", *serviceName, "token_recording", *tokenRecording)
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()

	select {
	case err = <-served: // the listener failed
	case <-ctx.Done():
	}

	// Shut down in this order: stop accepting and let the streams in
	// flight finish, then flush the spans. A request's span ends after its
	// last token reached the client, so flushing before the server has
	// stopped would lose the spans of the last requests. The streams get
	// the shutdown timeout less a few seconds kept to send the spans
	// (which also bounds the wait on an exporter that is down).
	flushTime := min(*shutdownTimeout/5, 5*time.Second)
	log.Info("shutting down: waiting for the streams in flight", "timeout", *shutdownTimeout-flushTime)
	drain, cancel := context.WithTimeout(context.Background(), *shutdownTimeout-flushTime)
	if serr := srv.Shutdown(drain); serr != nil {
		log.Warn("streams still in flight at the timeout; cutting them", "err", serr)
		_ = srv.Close()
	}
	cancel()
	stopGC()
	flush, cancel := context.WithTimeout(context.Background(), flushTime)
	defer cancel()
	if ferr := tp.Shutdown(flush); ferr != nil {
		log.Warn("the last spans could not be sent", "err", ferr)
	}
	if mp != nil {
		_ = mp.Shutdown(flush)
	}
	if n := exportErrs.n.Load(); n > 1 {
		log.Warn("OpenTelemetry errors while running", "count", n)
	}
	if errors.Is(err, http.ErrServerClosed) {
		err = nil
	}
	return err
}

// upstreamList is the -upstream flag: engine base URLs.
type upstreamList []*url.URL

func (l *upstreamList) String() string {
	s := make([]string, len(*l))
	for i, u := range *l {
		s[i] = u.String()
	}
	return strings.Join(s, ",")
}

func (l *upstreamList) Set(v string) error {
	for _, s := range strings.Split(v, ",") {
		u, err := url.Parse(strings.TrimSpace(s))
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return fmt.Errorf("%q is not an http(s) URL", s)
		}
		*l = append(*l, u)
	}
	return nil
}

func parseRecording(s string) (instrument.TokenRecording, error) {
	switch s {
	case "events":
		return instrument.RecordEvents, nil
	case "compact":
		return instrument.RecordCompact, nil
	case "both":
		return instrument.RecordEventsAndCompact, nil
	}
	return 0, fmt.Errorf("-token-recording %q: want events, compact or both", s)
}

// errorLogger is the OpenTelemetry error handler: it logs the first error
// (an exporter that cannot reach its endpoint fails every batch) and
// counts the others.
type errorLogger struct {
	log *slog.Logger
	n   atomic.Int64
}

func (e *errorLogger) Handle(err error) {
	if e.n.Add(1) == 1 {
		e.log.Warn("OpenTelemetry error, e.g. spans not exported (logged once; requests are not affected)", "err", err)
	}
}

// PromptTypeHeader names a request's prompt type for the metrics and the
// analyzer's groups (prompt_type); the load generator sends its request
// type in it. Values are normalised and capped by the middleware.
const PromptTypeHeader = "X-Prompt-Type"

// classifier labels each request: prompt_type from PromptTypeHeader, else
// by prompt size; model_version from -model-version, else the model
// requested.
func classifier(modelVersion string) instrument.Classifier {
	return func(r *http.Request, info instrument.RequestInfo) instrument.Classification {
		c := instrument.Classification{PromptType: r.Header.Get(PromptTypeHeader), ModelVersion: modelVersion}
		if c.PromptType == "" {
			switch {
			case info.PromptChars >= 16_000: // ≈ 4k tokens
				c.PromptType = "long"
			case info.PromptChars >= 2_000:
				c.PromptType = "medium"
			default:
				c.PromptType = "short"
			}
		}
		if c.ModelVersion == "" {
			c.ModelVersion = info.Model
		}
		return c
	}
}

// probe dials a host:port endpoint over TCP once; nil when it answers or
// is not a host:port.
func probe(ctx context.Context, endpoint string, timeout time.Duration) error {
	if _, _, err := net.SplitHostPort(endpoint); err != nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var d net.Dialer
	c, err := d.DialContext(ctx, "tcp", endpoint)
	if err != nil {
		return err
	}
	return c.Close()
}
