package instrument

import (
	"io"
	"net/http"
	"time"

	"github.com/felixge/httpsnoop"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

// Handler wraps the handler of an OpenAI-compatible gateway (for POST
// /v1/chat/completions and /v1/completions) so that each request becomes one
// SERVER span named "{operation} {model}" and, when the response is a
// stream, one span event per token-bearing chunk, stamped when its bytes
// were written, plus the compact encoding of every token time.
//
// The response passes through unchanged: the wrapper only looks at bytes
// after they were written, keeps http.Flusher, http.Hijacker,
// io.ReaderFrom and Unwrap (for http.ResponseController), and never
// panics into the gateway. Requests the filter does not select (by default
// anything but POST .../completions) are not touched.
func Handler(next http.Handler, opts ...Option) http.Handler {
	cfg := newConfig(opts)
	return &handler{
		next:   next,
		cfg:    cfg,
		tracer: cfg.tracerProvider.Tracer(ScopeName, trace.WithInstrumentationVersion(Version)),
	}
}

type handler struct {
	next   http.Handler
	cfg    *config
	tracer trace.Tracer
}

func (h *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !h.cfg.filter(r) {
		h.next.ServeHTTP(w, r)
		return
	}
	start := time.Now()
	info := readRequestInfo(r, &r.Body, h.cfg.maxRequestBody)
	st := newState(h.cfg, trace.SpanKindServer, start, info)
	if h.cfg.classifier != nil {
		st.class = h.cfg.classifier(r, info)
	}
	ctx := h.cfg.propagators.Extract(r.Context(), propagation.HeaderCarrier(r.Header))
	ctx, span := h.tracer.Start(ctx, spanName(info),
		trace.WithSpanKind(trace.SpanKindServer),
		trace.WithTimestamp(start),
		trace.WithAttributes(st.startAttributes(r)...))
	st.span, st.spanCtx = span, span.SpanContext()
	if h.cfg.instanceFn != nil {
		st.setInstance(h.cfg.instanceFn(r))
	}

	ww := httpsnoop.Wrap(w, httpsnoop.Hooks{
		WriteHeader: func(next httpsnoop.WriteHeaderFunc) httpsnoop.WriteHeaderFunc {
			return func(code int) {
				next(code)
				if code >= 200 || code == http.StatusSwitchingProtocols {
					st.decide(w.Header(), code)
				}
			}
		},
		Write: func(next httpsnoop.WriteFunc) httpsnoop.WriteFunc {
			return func(p []byte) (int, error) {
				n, err := next(p)
				if err != nil && st.writeErr == nil {
					st.writeErr = err
				}
				st.wrote(w.Header(), r.Host, p[:n])
				return n, err
			}
		},
		ReadFrom: func(next httpsnoop.ReadFromFunc) httpsnoop.ReadFromFunc {
			return func(src io.Reader) (int64, error) {
				// Observe what is copied; io.Copy keeps the bytes flowing
				// as they arrive.
				return next(&observingReader{r: src, st: st, h: w.Header(), host: r.Host})
			}
		},
	})

	defer func() {
		// A panic in the gateway's handler (http.ErrAbortHandler from
		// ReverseProxy on a broken client included) still ends the span,
		// then goes on up as before.
		p := recover()
		st.finish(time.Now(), r.Context().Err())
		if p != nil {
			panic(p)
		}
	}()
	h.next.ServeHTTP(ww, r.WithContext(withState(ctx, st)))
}

// wrote observes bytes that went to the client.
func (st *reqState) wrote(h http.Header, host string, p []byte) {
	if !st.decided {
		st.decide(h, http.StatusOK)
	}
	if !st.admitted {
		// No Transport named the engine: fall back to the gateway's host.
		st.setInstance(host)
	}
	st.observe(p)
}

type observingReader struct {
	r    io.Reader
	st   *reqState
	h    http.Header
	host string
}

func (o *observingReader) Read(p []byte) (int, error) {
	n, err := o.r.Read(p)
	if n > 0 {
		o.st.wrote(o.h, o.host, p[:n])
	}
	return n, err
}
