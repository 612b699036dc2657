// Package balancer is the example gateway's load balancer: an
// httputil.ReverseProxy that sends each request to the next of several
// OpenAI-compatible engine instances, round robin.
package balancer

import (
	"errors"
	"log/slog"
	"net/http"
	"net/http/httputil"
	"net/url"
	"sync/atomic"
)

// New returns a reverse proxy over upstreams that sends requests round
// robin through transport (nil: http.DefaultTransport). Streams are
// flushed to the client as they arrive.
func New(upstreams []*url.URL, transport http.RoundTripper, log *slog.Logger) (http.Handler, error) {
	if len(upstreams) == 0 {
		return nil, errors.New("balancer: no upstream")
	}
	if log == nil {
		log = slog.Default()
	}
	var next atomic.Uint64
	return &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			u := upstreams[(next.Add(1)-1)%uint64(len(upstreams))]
			pr.SetURL(u)
			pr.SetXForwarded()
		},
		Transport: transport,
		// SSE needs every chunk at once; -1 flushes after each write.
		FlushInterval: -1,
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			log.Warn("upstream failed", "path", r.URL.Path, "err", err)
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusBadGateway)
			_, _ = w.Write([]byte(`{"error":{"message":"upstream engine unreachable","type":"server_error","param":null,"code":null}}`))
		},
	}, nil
}
