package instrument_test

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	"go.uber.org/goleak"

	"github.com/tokentrace/tokentrace/instrument"
	"github.com/tokentrace/tokentrace/semconv"
)

// SSE pieces of the bad-input streams.
const (
	biRole = `data: {"id":"chatcmpl-b","object":"chat.completion.chunk","model":"m","choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}]}` + "\n\n"
	biStop = `data: {"id":"chatcmpl-b","object":"chat.completion.chunk","model":"m","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}` + "\n\n"
	biDone = "data: [DONE]\n\n"
)

func biTok(i int) string {
	return fmt.Sprintf(`data: {"id":"chatcmpl-b","object":"chat.completion.chunk","model":"m","choices":[{"index":0,"delta":{"content":"w%d "},"finish_reason":null}]}`+"\n\n", i)
}

func biToks(from, to int) []string {
	var out []string
	for i := from; i < to; i++ {
		out = append(out, biTok(i))
	}
	return out
}

func biJoin(parts ...any) []string {
	var out []string
	for _, p := range parts {
		switch p := p.(type) {
		case string:
			out = append(out, p)
		case []string:
			out = append(out, p...)
		default:
			panic(fmt.Sprintf("biJoin: %T", p))
		}
	}
	return out
}

// biGiantLine is one token chunk whose data line is about size bytes,
// split into 64 KiB writes none of which holds a newline until the end.
func biGiantLine(size int) []string {
	out := []string{`data: {"id":"chatcmpl-b","model":"m","choices":[{"index":0,"delta":{"content":"`}
	piece := strings.Repeat("A", 64<<10)
	for n := 0; n < size; n += len(piece) {
		out = append(out, piece)
	}
	return append(out, `"},"finish_reason":null}]}`+"\n\n")
}

// biCase is a response an inner handler (or an engine) writes, and the
// span the middleware must make of it.
type biCase struct {
	name   string
	status int    // 0 means 200
	ctype  string // "" means text/event-stream
	pieces []string

	outcome   string
	errStatus bool // span status Error
	errType   any  // error.type, nil when absent
	tokens    any  // tokentrace.tokens (int64), nil when absent (not streamed)
	malformed any  // tokentrace.stream.malformed_chunks, nil when absent
	oversized any  // tokentrace.stream.oversized_lines, nil when absent
}

// serve writes the case's response, one Write and Flush per piece, and
// returns the bytes that were accepted.
func (c *biCase) serve(w http.ResponseWriter) []byte {
	ct := c.ctype
	if ct == "" {
		ct = "text/event-stream"
	}
	w.Header().Set("Content-Type", ct)
	w.WriteHeader(c.statusCode())
	rc := http.NewResponseController(w)
	var wrote bytes.Buffer
	for _, p := range c.pieces {
		n, err := io.WriteString(w, p)
		wrote.WriteString(p[:n])
		if err != nil {
			break
		}
		if err := rc.Flush(); err != nil {
			break
		}
	}
	return wrote.Bytes()
}

func (c *biCase) statusCode() int {
	if c.status == 0 {
		return http.StatusOK
	}
	return c.status
}

// Upstream error bodies as vLLM and OpenAI send them.
const (
	bi400Body = `{"object":"error","error":{"message":"'max_tokens' is too large: 100000. This model's maximum context length is 8192 tokens.","type":"BadRequestError","param":"max_tokens","code":400}}`
	bi503Body = `{"error":{"message":"The engine is currently overloaded, please try again later.","type":"server_error","param":null,"code":null}}`
)

func biCases() []biCase {
	return []biCase{{
		name:    "well-formed control",
		pieces:  biJoin(biRole, biToks(0, 8), biStop, biDone),
		outcome: semconv.OutcomeComplete, tokens: int64(8),
	}, {
		// Non-JSON data lines, a broken object and a non-object among good
		// chunks: counted as malformed, skipped, tokens still counted.
		// Comments and other SSE fields are not malformed.
		name: "malformed data lines mixed with good chunks",
		pieces: biJoin(biRole, ": keep-alive\n\n", biToks(0, 3),
			"data: not json at all\n\n", biToks(3, 5),
			"event: message\ndata: {broken\n\n", biTok(5),
			"data: [1,2,3]\n\n", biToks(6, 9), biStop, biDone),
		outcome: semconv.OutcomeComplete, tokens: int64(9), malformed: int64(3),
	}, {
		// A 5 MiB data line, sent in 64 KiB writes without a newline, then
		// good chunks. The parser keeps only its 64 KiB prefix, scanned as a
		// truncated (hence malformed) chunk that still opened a non-empty
		// content string: it counts as one token.
		name:    "giant line then good chunks",
		pieces:  biJoin(biRole, biToks(0, 3), biGiantLine(5<<20), biToks(3, 6), biStop, biDone),
		outcome: semconv.OutcomeComplete, tokens: int64(7), malformed: int64(1), oversized: int64(1),
	}, {
		name:      "truncated after 10 tokens",
		pieces:    biJoin(biRole, biToks(0, 10)),
		outcome:   semconv.OutcomeTruncated,
		errStatus: true, errType: "stream_truncated", tokens: int64(10),
	}, {
		// Decision: a 4xx from the engine is an upstream_error with span
		// status Error on SERVER and CLIENT spans alike. Unlike a plain
		// HTTP server span (where 4xx leaves the status unset), this span
		// is the completion, and the completion failed: GenAI conventions
		// set Error whenever error.type is set.
		name:   "upstream 400 with OpenAI error JSON",
		status: http.StatusBadRequest, ctype: "application/json",
		pieces:  []string{bi400Body},
		outcome: semconv.OutcomeUpstreamError, errStatus: true, errType: "400",
	}, {
		name:   "upstream 503 with OpenAI error JSON",
		status: http.StatusServiceUnavailable, ctype: "application/json",
		pieces:  []string{bi503Body},
		outcome: semconv.OutcomeUpstreamError, errStatus: true, errType: "503",
	}, {
		name: "error chunk mid-stream",
		pieces: biJoin(biRole, biToks(0, 3),
			`data: {"error":{"message":"CUDA out of memory","type":"InternalServerError","code":500}}`+"\n\n", biDone),
		outcome: semconv.OutcomeUpstreamError, errStatus: true, errType: "upstream_error", tokens: int64(3),
	}}
}

// biCheckSpan checks the one span made of c.
func biCheckSpan(t *testing.T, spans []sdktrace.ReadOnlySpan, c *biCase, kind trace.SpanKind) {
	t.Helper()
	if len(spans) != 1 {
		t.Fatalf("got %d spans, want 1", len(spans))
	}
	s := spans[0]
	if s.SpanKind() != kind {
		t.Errorf("span kind %v, want %v", s.SpanKind(), kind)
	}
	pxWant(t, s, map[attribute.Key]any{
		semconv.StreamOutcome:      c.outcome,
		semconv.ErrorType:          c.errType,
		semconv.Tokens:             c.tokens,
		semconv.MalformedChunks:    c.malformed,
		semconv.OversizedLines:     c.oversized,
		semconv.HTTPResponseStatus: int64(c.statusCode()),
	})
	if got := s.Status().Code == codes.Error; got != c.errStatus {
		t.Errorf("status %v, want Error: %t", s.Status(), c.errStatus)
	}
	wantEvents := int64(0)
	if c.tokens != nil {
		wantEvents = c.tokens.(int64)
	}
	if n := len(pxEvents(s, semconv.TokenEvent)); int64(n) != wantEvents {
		t.Errorf("%d token events, want %d", n, wantEvents)
	}
}

// TestBadInput runs each bad response through the Handler (wrapping the
// handler that writes it), through a ReverseProxy gateway (the engine
// writes it) and through the Transport alone (the engine writes it, the
// client reads it). The bytes the client gets must be exactly those
// written, and the one span must say what happened.
func TestBadInput(t *testing.T) {
	for _, c := range biCases() {
		t.Run(c.name, func(t *testing.T) {
			t.Run("handler", func(t *testing.T) {
				tp, rec := newProvider(t, 10000)
				wrote := make(chan []byte, 1)
				srv := httptest.NewServer(instrument.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					wrote <- c.serve(w)
				}), instrument.WithTracerProvider(tp)))
				defer srv.Close()
				resp, got := pxRead(t, srv.Client(), newChatRequest(srv.URL, chatBody("m", true, false)))
				biCheckBytes(t, resp, got, <-wrote, &c)
				biCheckSpan(t, pxSpans(t, rec, 1), &c, trace.SpanKindServer)
			})
			t.Run("proxy", func(t *testing.T) {
				tp, rec := newProvider(t, 10000)
				wrote := make(chan []byte, 1)
				gw, _ := pxGateway(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					wrote <- c.serve(w)
				}), tp, instrument.NewTracker())
				resp, got := pxRead(t, gw.Client(), newChatRequest(gw.URL, chatBody("m", true, false)))
				biCheckBytes(t, resp, got, <-wrote, &c)
				biCheckSpan(t, pxSpans(t, rec, 1), &c, trace.SpanKindServer)
			})
			t.Run("transport", func(t *testing.T) {
				tp, rec := newProvider(t, 10000)
				wrote := make(chan []byte, 1)
				srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					wrote <- c.serve(w)
				}))
				defer srv.Close()
				client := &http.Client{Transport: instrument.Transport(srv.Client().Transport, instrument.WithTracerProvider(tp))}
				resp, got := pxRead(t, client, newChatRequest(srv.URL, chatBody("m", true, false)))
				biCheckBytes(t, resp, got, <-wrote, &c)
				biCheckSpan(t, pxSpans(t, rec, 1), &c, trace.SpanKindClient)
			})
		})
	}
}

func biCheckBytes(t *testing.T, resp *http.Response, got, wrote []byte, c *biCase) {
	t.Helper()
	if resp.StatusCode != c.statusCode() {
		t.Errorf("client got status %d, want %d", resp.StatusCode, c.statusCode())
	}
	if want := strings.Join(c.pieces, ""); string(wrote) != want {
		t.Fatalf("the inner handler could not write its response (%d of %d bytes)", len(wrote), len(want))
	}
	if !bytes.Equal(got, wrote) {
		i := 0
		for i < len(got) && i < len(wrote) && got[i] == wrote[i] {
			i++
		}
		t.Errorf("client got %d bytes, %d were written; first difference at byte %d", len(got), len(wrote), i)
	}
}

// biSink is a ResponseWriter that discards what it is given.
type biSink struct{ h http.Header }

func (s biSink) Header() http.Header         { return s.h }
func (s biSink) Write(p []byte) (int, error) { return len(p), nil }
func (s biSink) WriteHeader(int)             {}
func (s biSink) Flush()                      {}

func TestGiantLineMemoryIsBounded(t *testing.T) {
	tp, rec := newProvider(t, 10000)
	const size = 16 << 20
	content := bytes.Repeat([]byte("A"), size)
	h := instrument.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = io.WriteString(w, biRole+biTok(0))
		_, _ = io.WriteString(w, `data: {"choices":[{"index":0,"delta":{"content":"`)
		for i := 0; i < size; i += 4 << 10 {
			_, _ = w.Write(content[i : i+4<<10])
		}
		_, _ = io.WriteString(w, "\"}}]}\n\n"+biTok(1)+biTok(2)+biStop+biDone)
	}), instrument.WithTracerProvider(tp))
	req := newChatRequest("http://gw", chatBody("m", true, false))

	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	h.ServeHTTP(biSink{h: http.Header{}}, req)
	spans := pxSpans(t, rec, 1)
	runtime.ReadMemStats(&after)

	// Buffering the line would allocate at least its 16 MiB; the parser
	// keeps at most its 64 KiB line limit.
	d := after.TotalAlloc - before.TotalAlloc
	if d > 4<<20 {
		t.Errorf("serving a %d MiB line allocated %d KiB", size>>20, d>>10)
	}
	t.Logf("serving a %d MiB line allocated %d KiB", size>>20, d>>10)
	pxWant(t, spans[0], map[attribute.Key]any{
		semconv.OversizedLines: int64(1),
		semconv.Tokens:         int64(4), // w0, the giant one, w1, w2
		semconv.StreamOutcome:  semconv.OutcomeComplete,
	})
}

// biSlowStream writes a role chunk and then up to 1,000 tokens 10 ms
// apart, and reports how it stopped: "ctx" when its request context was
// canceled, "write" on a write error, "end" if it was never stopped.
func biSlowStream(stopped chan<- string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		rc := http.NewResponseController(w)
		how := "end"
		defer func() { stopped <- how }()
		if _, err := io.WriteString(w, biRole); err != nil {
			how = "write"
			return
		}
		_ = rc.Flush()
		for i := range 1000 {
			select {
			case <-r.Context().Done():
				how = "ctx"
				return
			case <-time.After(10 * time.Millisecond):
			}
			if _, err := io.WriteString(w, biTok(i)); err != nil {
				how = "write"
				return
			}
			if err := rc.Flush(); err != nil {
				how = "write"
				return
			}
		}
	}
}

// biReadThenCancel reads n token chunks of a stream from url, then
// cancels the request and returns the bytes it read.
func biReadThenCancel(t *testing.T, c *http.Client, url string, n int) []byte {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	resp, err := c.Do(newChatRequest(url, chatBody("m", true, false)).WithContext(ctx))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	br := bufio.NewReader(resp.Body)
	var got bytes.Buffer
	for seen := 0; seen < n; {
		line, err := br.ReadString('\n')
		got.WriteString(line)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(line, `"content":"w`) {
			seen++
		}
	}
	cancel()
	return got.Bytes()
}

func biWaitStopped(t *testing.T, stopped <-chan string) string {
	t.Helper()
	select {
	case how := <-stopped:
		return how
	case <-time.After(10 * time.Second):
		t.Fatal("the handler kept writing after the client went away")
		return ""
	}
}

func TestBadInputClientDisconnect(t *testing.T) {
	// Without the middleware: how the handler learns that the client left.
	t.Run("bare", func(t *testing.T) {
		stopped := make(chan string, 1)
		srv := httptest.NewServer(biSlowStream(stopped))
		defer srv.Close()
		got := biReadThenCancel(t, srv.Client(), srv.URL, 5)
		if how := biWaitStopped(t, stopped); how != "ctx" && how != "write" {
			t.Fatalf("bare handler stopped by %q", how)
		}
		if !bytes.HasPrefix(got, []byte(biRole)) {
			t.Errorf("client read %q", got)
		}
	})
	check := func(t *testing.T, rec *tracetest.SpanRecorder, got []byte) {
		t.Helper()
		all := strings.Join(biJoin(biRole, biToks(0, 1000)), "")
		if !strings.HasPrefix(all, string(got)) || len(got) < len(biRole+biTok(0)+biTok(1)+biTok(2)+biTok(3)) {
			t.Errorf("client read %q, not the start of what was written", got)
		}
		s := pxSpans(t, rec, 1)[0]
		pxWant(t, s, map[attribute.Key]any{
			semconv.StreamOutcome: semconv.OutcomeClientDisconnect,
			semconv.ErrorType:     "client_disconnect",
		})
		if s.Status().Code != codes.Error {
			t.Errorf("status %v, want Error", s.Status())
		}
		n, _ := attrOf(s, semconv.Tokens)
		if n.AsInt64() < 5 || n.AsInt64() >= 1000 {
			t.Errorf("tokens = %d, want ≥ 5 (read by the client) and < 1000", n.AsInt64())
		}
		if ev := len(pxEvents(s, semconv.TokenEvent)); int64(ev) != n.AsInt64() {
			t.Errorf("%d token events for %d tokens", ev, n.AsInt64())
		}
	}
	t.Run("handler", func(t *testing.T) {
		tp, rec := newProvider(t, 10000)
		stopped := make(chan string, 1)
		srv := httptest.NewServer(instrument.Handler(biSlowStream(stopped), instrument.WithTracerProvider(tp)))
		defer srv.Close()
		got := biReadThenCancel(t, srv.Client(), srv.URL, 5)
		// The wrapped handler learns it the same way as the bare one.
		if how := biWaitStopped(t, stopped); how != "ctx" && how != "write" {
			t.Fatalf("wrapped handler stopped by %q", how)
		}
		check(t, rec, got)
	})
	t.Run("proxy", func(t *testing.T) {
		// The engine behind the gateway sees its request canceled: the
		// ReverseProxy aborts (panics with http.ErrAbortHandler) through
		// the Handler, which ends the span and lets the panic go on.
		tp, rec := newProvider(t, 10000)
		stopped := make(chan string, 1)
		gw, _ := pxGateway(t, biSlowStream(stopped), tp, instrument.NewTracker())
		got := biReadThenCancel(t, gw.Client(), gw.URL, 5)
		if how := biWaitStopped(t, stopped); how != "ctx" && how != "write" {
			t.Fatalf("engine stopped by %q", how)
		}
		check(t, rec, got)
	})
}

func TestBadInputPanicPropagates(t *testing.T) {
	tp, rec := newProvider(t, 10000)
	written := biRole + biTok(0) + biTok(1) + biTok(2)
	inner := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = io.WriteString(w, written)
		_ = http.NewResponseController(w).Flush()
		panic(http.ErrAbortHandler)
	})
	mw := instrument.Handler(inner, instrument.WithTracerProvider(tp))
	recovered := make(chan any, 1)
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer func() {
			p := recover()
			recovered <- p
			if p != nil {
				panic(p) // on to net/http, which aborts the connection
			}
		}()
		mw.ServeHTTP(w, r)
	}))
	srv.Config.ErrorLog = log.New(io.Discard, "", 0)
	srv.Start()
	defer srv.Close()

	resp, err := srv.Client().Do(newChatRequest(srv.URL, chatBody("m", true, false)))
	if err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err == nil {
		t.Error("client read a clean end of stream, want the connection aborted")
	}
	if string(got) != written {
		t.Errorf("client read %q, want %q", got, written)
	}
	select {
	case p := <-recovered:
		if p != http.ErrAbortHandler {
			t.Errorf("the middleware turned the panic into %v", p)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("handler never returned")
	}
	s := pxSpans(t, rec, 1)[0]
	pxWant(t, s, map[attribute.Key]any{
		semconv.StreamOutcome: semconv.OutcomeTruncated,
		semconv.Tokens:        int64(3),
	})
	if s.Status().Code != codes.Error {
		t.Errorf("status %v, want Error", s.Status())
	}
}

func TestBadInputExporterDown(t *testing.T) {
	// The export timeout (default 10 s) bounds how long an export in
	// flight outlives a Shutdown whose context expired; shorten it so that
	// the test can check that nothing is left behind.
	const exportTimeout = time.Second
	before := goleak.IgnoreCurrent()

	// A port with nothing listening.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	deadAddr := l.Addr().String()
	l.Close()

	tp, err := instrument.NewTracerProvider(context.Background(),
		instrument.WithEndpoint(deadAddr), instrument.WithInsecure(),
		instrument.WithExportTimeout(exportTimeout),
		instrument.WithBatching(0, 5*time.Millisecond)) // exports start during the requests
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(instrument.Handler(&engine{Tokens: 50, Usage: true}, instrument.WithTracerProvider(tp)))
	for i := range 5 {
		start := time.Now()
		_, got := pxRead(t, srv.Client(), newChatRequest(srv.URL, chatBody("m", true, true)))
		took := time.Since(start)
		if !strings.HasSuffix(string(got), "data: [DONE]\n\n") {
			t.Fatalf("request %d: incomplete response", i)
		}
		// Exports are failing and retrying meanwhile: requests must not
		// wait for any of it.
		if took > exportTimeout/2 {
			t.Errorf("request %d took %v with the exporter down", i, took)
		}
	}
	srv.Close()

	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	start := time.Now()
	err = tp.Shutdown(ctx)
	if took := time.Since(start); took > exportTimeout {
		t.Errorf("Shutdown took %v with a 300ms context (err %v)", took, err)
	}
	t.Logf("Shutdown with the exporter down took %v: %v", time.Since(start), err)

	// The export in flight ends at the exporter's timeout, then the
	// processor stops the exporter, which closes its gRPC connection:
	// no goroutine may be left after that.
	deadline := time.Now().Add(exportTimeout + 8*time.Second)
	for {
		err := goleak.Find(before)
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Errorf("goroutines left after Shutdown: %v", err)
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func TestBadInputResponseWriterInterfaces(t *testing.T) {
	tp, rec := newProvider(t, 10000)
	stream := biRole + biTok(0) + biTok(1) + biTok(2) + biTok(3) + biStop + biDone
	type result struct{ errs []string }
	res := make(chan result, 1)
	inner := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var errs []string
		fail := func(f string, a ...any) { errs = append(errs, fmt.Sprintf(f, a...)) }
		defer func() { res <- result{errs} }()
		if _, ok := w.(http.Flusher); !ok {
			fail("not an http.Flusher")
		}
		if _, ok := w.(http.Hijacker); !ok {
			fail("not an http.Hijacker")
		}
		rf, ok := w.(io.ReaderFrom)
		if !ok {
			fail("not an io.ReaderFrom")
		}
		rc := http.NewResponseController(w)
		if err := rc.SetWriteDeadline(time.Now().Add(10 * time.Second)); err != nil {
			fail("SetWriteDeadline: %v", err)
		}
		if err := rc.SetReadDeadline(time.Now().Add(10 * time.Second)); err != nil {
			fail("SetReadDeadline: %v", err)
		}
		if err := rc.EnableFullDuplex(); err != nil {
			fail("EnableFullDuplex: %v", err)
		}
		w.Header().Set("Content-Type", "text/event-stream")
		if err := rc.Flush(); err != nil {
			fail("Flush: %v", err)
		}
		if rf != nil {
			// An SSE body copied with ReadFrom (io.Copy's fast path). The
			// reader hides WriteTo so that the ReaderFrom path is the one
			// taken.
			if _, err := rf.ReadFrom(struct{ io.Reader }{strings.NewReader(stream)}); err != nil {
				fail("ReadFrom: %v", err)
			}
		}
	})
	srv := httptest.NewServer(instrument.Handler(inner, instrument.WithTracerProvider(tp)))
	defer srv.Close()
	_, got := pxRead(t, srv.Client(), newChatRequest(srv.URL, chatBody("m", true, false)))
	for _, e := range (<-res).errs {
		t.Error(e)
	}
	if string(got) != stream {
		t.Errorf("client got %q, want %q", got, stream)
	}
	s := pxSpans(t, rec, 1)[0]
	if n := len(pxEvents(s, semconv.TokenEvent)); n != 4 {
		t.Errorf("%d token events from the ReadFrom path, want 4", n)
	}
	pxWant(t, s, map[attribute.Key]any{
		semconv.Tokens:        int64(4),
		semconv.StreamOutcome: semconv.OutcomeComplete,
	})

	// Hijacking still works: the handler takes the connection over.
	t.Run("hijack", func(t *testing.T) {
		tp, rec := newProvider(t, 10000)
		srv := httptest.NewServer(instrument.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			conn, bw, err := http.NewResponseController(w).Hijack()
			if err != nil {
				t.Errorf("Hijack: %v", err)
				return
			}
			defer conn.Close()
			_, _ = bw.WriteString("HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 8\r\nConnection: close\r\n\r\nhijacked")
			_ = bw.Flush()
		}), instrument.WithTracerProvider(tp)))
		defer srv.Close()
		_, got := pxRead(t, srv.Client(), newChatRequest(srv.URL, chatBody("m", true, false)))
		if string(got) != "hijacked" {
			t.Errorf("client got %q", got)
		}
		if n := len(pxSpans(t, rec, 1)); n != 1 {
			t.Errorf("%d spans", n)
		}
	})
}

func TestBadInputUnselectedRequestsPassThrough(t *testing.T) {
	tp, rec := newProvider(t, 10000)
	tr := instrument.NewTracker()
	const models = `{"object":"list","data":[{"id":"m","object":"model"}]}`
	const embeddings = `{"object":"list","data":[{"object":"embedding","index":0,"embedding":[0.1,0.2]}],"model":"e","usage":{"prompt_tokens":2,"total_tokens":2}}`
	var mu sync.Mutex
	var bodies []string
	eng := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		bodies = append(bodies, string(b))
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		switch {
		case r.Method == http.MethodGet && r.URL.Path == "/v1/models":
			_, _ = io.WriteString(w, models)
		case r.Method == http.MethodPost && r.URL.Path == "/v1/embeddings":
			_, _ = io.WriteString(w, embeddings)
		default:
			http.Error(w, "no", http.StatusNotFound)
		}
	})
	const embReq = `{"model":"e","input":"hello"}`
	requests := func(base string) []*http.Request {
		get, _ := http.NewRequest(http.MethodGet, base+"/v1/models", nil)
		post, _ := http.NewRequest(http.MethodPost, base+"/v1/embeddings", strings.NewReader(embReq))
		post.Header.Set("Content-Type", "application/json")
		return []*http.Request{get, post}
	}
	want := []string{models, embeddings}

	gw, engSrv := pxGateway(t, eng, tp, tr)
	direct := &http.Client{Transport: instrument.Transport(nil, instrument.WithTracerProvider(tp), instrument.WithTracker(tr))}
	wrapped := httptest.NewServer(instrument.Handler(eng, instrument.WithTracerProvider(tp), instrument.WithTracker(tr)))
	defer wrapped.Close()
	for _, target := range []struct {
		name   string
		client *http.Client
		base   string
	}{
		{"gateway", gw.Client(), gw.URL},
		{"transport", direct, engSrv.URL},
		{"handler", wrapped.Client(), wrapped.URL},
	} {
		for i, req := range requests(target.base) {
			resp, got := pxRead(t, target.client, req)
			if resp.StatusCode != http.StatusOK || string(got) != want[i] {
				t.Errorf("%s %s %s: %s %q", target.name, req.Method, req.URL.Path, resp.Status, got)
			}
		}
	}
	mu.Lock()
	for i, b := range bodies {
		if i%2 == 1 && b != embReq {
			t.Errorf("engine got embeddings body %q, want %q", b, embReq)
		}
	}
	mu.Unlock()
	if spans := endedSpans(t, rec); len(spans) != 0 {
		for _, s := range spans {
			t.Errorf("span %q for a request the filter does not select", s.Name())
		}
	}
	if n := tr.InFlight(""); n != 0 {
		t.Errorf("%d requests in flight", n)
	}
}
