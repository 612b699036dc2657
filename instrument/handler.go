package instrument

import (
	"net/http"
	"time"

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
	names  spanNames
}

func (h *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !h.cfg.filter(r) {
		h.next.ServeHTTP(w, r)
		return
	}
	st := newState(h.cfg, trace.SpanKindServer, time.Now())
	st.info = readRequestInfo(r, &r.Body, h.cfg.maxRequestBody, &st.body)
	if h.cfg.classifier != nil {
		st.class = h.cfg.classifier(r, st.info)
	}
	ctx := h.cfg.propagators.Extract(r.Context(), propagation.HeaderCarrier(r.Header))
	ctx = st.startSpan(ctx, h.tracer, &h.names, r)
	if h.cfg.instanceFn != nil {
		st.setInstance(h.cfg.instanceFn(r))
	}

	ww := st.wrapWriter(w, r.Host)

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
