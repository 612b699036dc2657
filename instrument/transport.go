package instrument

import (
	"context"
	"io"
	"net/http"
	"sync"
	"time"

	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

// Transport wraps the RoundTripper a gateway uses to call its engine
// (httputil.ReverseProxy's Transport, or the http.Client of the openai-go
// client). It writes the W3C traceparent of the current span into the
// request, so that engine spans (vLLM's llm_request) join the trace, and it
// names the engine instance: by default the upstream host:port.
//
// Inside a [Handler] the Transport adds no span of its own: the Handler's
// span already times the tokens as they reach the client, and the
// Transport just tells it which instance serves the request. Used alone,
// the Transport makes a CLIENT span per completion request with one event
// per token-bearing chunk, stamped when its bytes were read from the
// engine, and ends it when the body reaches EOF, fails or is closed.
//
// A nil base means http.DefaultTransport.
func Transport(base http.RoundTripper, opts ...Option) http.RoundTripper {
	if base == nil {
		base = http.DefaultTransport
	}
	cfg := newConfig(opts)
	return &transport{
		base:   base,
		cfg:    cfg,
		tracer: cfg.tracerProvider.Tracer(ScopeName, trace.WithInstrumentationVersion(Version)),
	}
}

type transport struct {
	base   http.RoundTripper
	cfg    *config
	tracer trace.Tracer
	names  spanNames
}

var _ http.RoundTripper = (*transport)(nil)

func (t *transport) instance(r *http.Request) string {
	if t.cfg.instanceFn != nil {
		return t.cfg.instanceFn(r)
	}
	return canonicalHost(r)
}

// canonicalHost is host:port of the request's URL, with the scheme's
// default port made explicit.
func canonicalHost(r *http.Request) string {
	host := r.URL.Host
	if r.URL.Port() != "" || host == "" {
		return host
	}
	if r.URL.Scheme == "https" {
		return host + ":443"
	}
	return host + ":80"
}

func (t *transport) RoundTrip(r *http.Request) (*http.Response, error) {
	ctx := r.Context()
	if !t.cfg.filter(r) {
		r2 := r.Clone(ctx)
		t.cfg.propagators.Inject(ctx, propagation.HeaderCarrier(r2.Header))
		return t.base.RoundTrip(r2)
	}
	if st := stateFrom(ctx); st != nil {
		// Under a Handler: its span is the request's span.
		st.setInstance(t.instance(r))
		r2 := r.Clone(ctx)
		t.cfg.propagators.Inject(ctx, propagation.HeaderCarrier(r2.Header))
		return t.base.RoundTrip(r2)
	}

	st := newState(t.cfg, trace.SpanKindClient, time.Now())
	r2 := r.Clone(ctx)
	st.info = readRequestInfo(r2, &r2.Body, t.cfg.maxRequestBody, &st.body)
	if t.cfg.classifier != nil {
		st.class = t.cfg.classifier(r, st.info)
	}
	ctx = st.startSpan(ctx, t.tracer, &t.names, r)
	span := st.span
	st.setInstance(t.instance(r))
	t.cfg.propagators.Inject(ctx, propagation.HeaderCarrier(r2.Header))
	r2 = r2.WithContext(ctx)

	resp, err := t.base.RoundTrip(r2)
	if err != nil {
		span.RecordError(err)
		span.SetStatus(codes.Error, err.Error())
		st.failure = "transport_error"
		st.finish(time.Now(), err)
		return resp, err
	}
	st.decide(resp.Header, resp.StatusCode)
	if resp.Body == nil || resp.Body == http.NoBody {
		st.finish(time.Now(), nil)
		return resp, nil
	}
	resp.Body = &observedBody{rc: resp.Body, st: st, ctx: ctx}
	return resp, nil
}

// observedBody times the engine's bytes as the caller reads them, and ends
// the span at EOF, on a read error, or on Close, whichever comes first.
type observedBody struct {
	rc  io.ReadCloser
	st  *reqState
	ctx context.Context

	mu    sync.Mutex // Close may race a Read on another goroutine
	ended bool
}

func (b *observedBody) Read(p []byte) (int, error) {
	n, err := b.rc.Read(p)
	b.mu.Lock()
	if !b.ended {
		if n > 0 {
			b.st.observe(p[:n])
		}
		if err == io.EOF {
			b.end(nil)
		} else if err != nil {
			if b.ctx.Err() == nil {
				b.st.failure = "upstream_read_error"
			}
			b.end(err)
		}
	}
	b.mu.Unlock()
	return n, err
}

func (b *observedBody) Close() error {
	err := b.rc.Close()
	b.mu.Lock()
	if !b.ended && b.st.done {
		// Closed after [DONE] but before EOF, as clients that stop at
		// [DONE] (openai-go) do: the stream ended normally.
		b.end(nil)
	} else if !b.ended {
		// Closed before EOF: the caller stopped reading (or gave up).
		cerr := b.ctx.Err()
		if cerr == nil {
			cerr = context.Canceled
		}
		b.end(cerr)
	}
	b.mu.Unlock()
	return err
}

func (b *observedBody) end(err error) {
	b.ended = true
	if err != nil && b.st.span != nil {
		b.st.span.RecordError(err)
	}
	b.st.finish(time.Now(), err)
}
