package instrument

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"time"

	"github.com/felixge/httpsnoop"
)

// respWriter observes the bytes the gateway writes to its client. It lives
// inside the request's reqState, so wrapping a ResponseWriter allocates
// nothing, and a Write is one call through to the client's writer plus the
// observation (httpsnoop's generic wrapper costs about ten allocations per
// request and three indirect calls per Write).
//
// The wrapper given to the gateway must implement exactly the optional
// interfaces of the ResponseWriter it wraps: a handler that finds
// http.Hijacker, io.ReaderFrom or http.Pusher behaves differently. So
// wrapWriter uses a dedicated type only for the method sets of net/http's
// HTTP/1 and HTTP/2 writers, httptest.ResponseRecorder and a bare
// Flusher, the same sets httpsnoop.Wrap would expose for them, and
// httpsnoop.Wrap for every other writer.
type respWriter struct {
	w       http.ResponseWriter
	st      *reqState
	host    string
	flusher http.Flusher
}

// The optional interfaces httpsnoop.Wrap preserves, as bits.
const (
	ifFlusher = 1 << iota
	ifFlushError
	ifCloseNotifier
	ifHijacker
	ifReaderFrom
	ifDeadliner
	ifFullDuplex
	ifPusher
	ifStringWriter
)

const (
	// net/http's HTTP/1 *response.
	setHTTP1 = ifFlusher | ifFlushError | ifCloseNotifier | ifHijacker | ifReaderFrom | ifDeadliner | ifFullDuplex | ifStringWriter
	// net/http's HTTP/2 *http2responseWriter.
	setHTTP2 = ifFlusher | ifFlushError | ifCloseNotifier | ifDeadliner | ifFullDuplex | ifPusher | ifStringWriter
	// httptest.ResponseRecorder.
	setRecorder = ifFlusher | ifStringWriter
)

type flushErrorer interface{ FlushError() error }

type deadliner interface {
	SetReadDeadline(time.Time) error
	SetWriteDeadline(time.Time) error
}

type fullDuplexEnabler interface{ EnableFullDuplex() error }

func interfacesOf(w http.ResponseWriter) int {
	set := 0
	if _, ok := w.(http.Flusher); ok {
		set |= ifFlusher
	}
	if _, ok := w.(flushErrorer); ok {
		set |= ifFlushError
	}
	if _, ok := w.(http.CloseNotifier); ok {
		set |= ifCloseNotifier
	}
	if _, ok := w.(http.Hijacker); ok {
		set |= ifHijacker
	}
	if _, ok := w.(io.ReaderFrom); ok {
		set |= ifReaderFrom
	}
	if _, ok := w.(deadliner); ok {
		set |= ifDeadliner
	}
	if _, ok := w.(fullDuplexEnabler); ok {
		set |= ifFullDuplex
	}
	if _, ok := w.(http.Pusher); ok {
		set |= ifPusher
	}
	if _, ok := w.(io.StringWriter); ok {
		set |= ifStringWriter
	}
	return set
}

// wrapWriter returns the ResponseWriter the gateway's handler gets.
func (st *reqState) wrapWriter(w http.ResponseWriter, host string) http.ResponseWriter {
	rw := &st.rw
	*rw = respWriter{w: w, st: st, host: host}
	rw.flusher, _ = w.(http.Flusher)
	switch interfacesOf(w) {
	case 0:
		return rw
	case ifFlusher:
		return rwFlusher{rw}
	case setRecorder:
		return rwRecorder{rw}
	case setHTTP1:
		return rwHTTP1{rw}
	case setHTTP2:
		return rwHTTP2{rw}
	}
	return httpsnoop.Wrap(w, httpsnoop.Hooks{
		WriteHeader: func(next httpsnoop.WriteHeaderFunc) httpsnoop.WriteHeaderFunc {
			return func(code int) {
				next(code)
				rw.wroteHeader(code)
			}
		},
		Write: func(next httpsnoop.WriteFunc) httpsnoop.WriteFunc {
			return func(p []byte) (int, error) {
				n, err := next(p)
				rw.wrote(p[:n], err)
				return n, err
			}
		},
		ReadFrom: func(next httpsnoop.ReadFromFunc) httpsnoop.ReadFromFunc {
			return func(src io.Reader) (int64, error) {
				return next(&observingReader{r: src, rw: rw})
			}
		},
	})
}

func (rw *respWriter) Header() http.Header         { return rw.w.Header() }
func (rw *respWriter) Unwrap() http.ResponseWriter { return rw.w }

func (rw *respWriter) WriteHeader(code int) {
	rw.w.WriteHeader(code)
	rw.wroteHeader(code)
}

func (rw *respWriter) Write(p []byte) (int, error) {
	n, err := rw.w.Write(p)
	rw.wrote(p[:n], err)
	return n, err
}

func (rw *respWriter) wroteHeader(code int) {
	if code >= 200 || code == http.StatusSwitchingProtocols {
		rw.st.decide(rw.w.Header(), code)
	}
}

// wrote observes bytes that went to the client.
func (rw *respWriter) wrote(p []byte, err error) {
	st := rw.st
	if err != nil && st.writeErr == nil {
		st.writeErr = err
	}
	if !st.decided {
		st.decide(rw.w.Header(), http.StatusOK)
	}
	if !st.admitted {
		// No Transport named the engine: fall back to the gateway's host.
		st.setInstance(rw.host)
	}
	st.observe(p)
}

// readFrom copies src to the client through ReadFrom, observing what is
// copied; io.Copy keeps the bytes flowing as they arrive.
func (rw *respWriter) readFrom(src io.Reader) (int64, error) {
	return rw.w.(io.ReaderFrom).ReadFrom(&observingReader{r: src, rw: rw})
}

type observingReader struct {
	r  io.Reader
	rw *respWriter
}

func (o *observingReader) Read(p []byte) (int, error) {
	n, err := o.r.Read(p)
	if n > 0 {
		o.rw.wrote(p[:n], nil)
	}
	return n, err
}

// The wrapper types: one pointer each, so that returning one as an
// http.ResponseWriter does not allocate.

type rwFlusher struct{ *respWriter }

func (w rwFlusher) Flush() { w.flusher.Flush() }

type rwRecorder struct{ *respWriter }

func (w rwRecorder) Flush()                            { w.flusher.Flush() }
func (w rwRecorder) WriteString(s string) (int, error) { return w.Write([]byte(s)) }

type rwHTTP1 struct{ *respWriter }

func (w rwHTTP1) Flush()                                { w.flusher.Flush() }
func (w rwHTTP1) FlushError() error                     { return w.w.(flushErrorer).FlushError() }
func (w rwHTTP1) CloseNotify() <-chan bool              { return w.w.(http.CloseNotifier).CloseNotify() }
func (w rwHTTP1) ReadFrom(src io.Reader) (int64, error) { return w.readFrom(src) }
func (w rwHTTP1) SetReadDeadline(t time.Time) error     { return w.w.(deadliner).SetReadDeadline(t) }
func (w rwHTTP1) SetWriteDeadline(t time.Time) error    { return w.w.(deadliner).SetWriteDeadline(t) }
func (w rwHTTP1) EnableFullDuplex() error               { return w.w.(fullDuplexEnabler).EnableFullDuplex() }
func (w rwHTTP1) WriteString(s string) (int, error)     { return w.Write([]byte(s)) }
func (w rwHTTP1) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	return w.w.(http.Hijacker).Hijack()
}

type rwHTTP2 struct{ *respWriter }

func (w rwHTTP2) Flush()                             { w.flusher.Flush() }
func (w rwHTTP2) FlushError() error                  { return w.w.(flushErrorer).FlushError() }
func (w rwHTTP2) CloseNotify() <-chan bool           { return w.w.(http.CloseNotifier).CloseNotify() }
func (w rwHTTP2) SetReadDeadline(t time.Time) error  { return w.w.(deadliner).SetReadDeadline(t) }
func (w rwHTTP2) SetWriteDeadline(t time.Time) error { return w.w.(deadliner).SetWriteDeadline(t) }
func (w rwHTTP2) EnableFullDuplex() error            { return w.w.(fullDuplexEnabler).EnableFullDuplex() }
func (w rwHTTP2) WriteString(s string) (int, error)  { return w.Write([]byte(s)) }
func (w rwHTTP2) Push(target string, opts *http.PushOptions) error {
	return w.w.(http.Pusher).Push(target, opts)
}
