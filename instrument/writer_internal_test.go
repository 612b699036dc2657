package instrument

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/felixge/httpsnoop"
)

// The wrapper a gateway's handler gets must expose exactly the optional
// interfaces of the writer it wraps, as httpsnoop.Wrap does, whichever
// path (dedicated type or httpsnoop) wrapWriter takes.
func TestWrapWriterKeepsTheInterfaceSet(t *testing.T) {
	check := func(t *testing.T, name string, w http.ResponseWriter) {
		t.Helper()
		st := newState(newConfig(nil), 0, time.Now())
		defer offsetsPool.Put(st.offsets)
		got := st.wrapWriter(w, "h:1")
		want := httpsnoop.Wrap(w, httpsnoop.Hooks{})
		if g, w0, ws := interfacesOf(got), interfacesOf(w), interfacesOf(want); g != w0 || g != ws {
			t.Errorf("%s: wrapper has interfaces %09b, the writer %09b, httpsnoop's wrapper %09b", name, g, w0, ws)
		}
		if u, ok := got.(interface{ Unwrap() http.ResponseWriter }); !ok || u.Unwrap() != w {
			t.Errorf("%s: Unwrap does not return the writer", name)
		}
	}

	// Writers of the real servers.
	for _, proto := range []string{"HTTP/1.1", "HTTP/2.0"} {
		t.Run(proto, func(t *testing.T) {
			done := make(chan struct{})
			srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				defer close(done)
				if r.Proto != proto {
					t.Errorf("request over %s, want %s", r.Proto, proto)
				}
				set := interfacesOf(w)
				if want := map[string]int{"HTTP/1.1": setHTTP1, "HTTP/2.0": setHTTP2}[proto]; set != want {
					t.Errorf("net/http's %s writer has interfaces %09b, wrapWriter expects %09b: a dedicated type is no longer used", proto, set, want)
				}
				check(t, proto, w)
			}))
			srv.EnableHTTP2 = proto == "HTTP/2.0"
			srv.StartTLS()
			defer srv.Close()
			resp, err := srv.Client().Get(srv.URL)
			if err != nil {
				t.Fatal(err)
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			<-done
		})
	}
	if set := interfacesOf(httptest.NewRecorder()); set != setRecorder {
		t.Errorf("httptest.ResponseRecorder has interfaces %09b, wrapWriter expects %09b", set, setRecorder)
	}
	check(t, "recorder", httptest.NewRecorder())
	check(t, "plain", plainWriter{httptest.NewRecorder()})
	check(t, "flusher", flushWriter{plainWriter{httptest.NewRecorder()}})
	check(t, "flusher+hijacker", hijackFlushWriter{flushWriter{plainWriter{httptest.NewRecorder()}}})
}

type plainWriter struct{ r *httptest.ResponseRecorder }

func (w plainWriter) Header() http.Header         { return w.r.Header() }
func (w plainWriter) Write(p []byte) (int, error) { return w.r.Write(p) }
func (w plainWriter) WriteHeader(code int)        { w.r.WriteHeader(code) }

type flushWriter struct{ plainWriter }

func (flushWriter) Flush() {}

type hijackFlushWriter struct{ flushWriter }

func (hijackFlushWriter) Hijack() (net.Conn, *bufio.ReadWriter, error) { return nil, nil, nil }
