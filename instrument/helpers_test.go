package instrument_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/tokentrace/tokentrace/instrument"
)

// newProvider returns a real SDK provider with a synchronous recorder. A
// limit of 0 keeps the SDK's default span limits (128 events).
func newProvider(t testing.TB, eventLimit int) (*sdktrace.TracerProvider, *tracetest.SpanRecorder) {
	t.Helper()
	rec := tracetest.NewSpanRecorder()
	opts := []sdktrace.TracerProviderOption{sdktrace.WithSpanProcessor(rec)}
	if eventLimit > 0 {
		l := sdktrace.NewSpanLimits()
		l.EventCountLimit = eventLimit
		opts = append(opts, sdktrace.WithRawSpanLimits(l))
	}
	tp := sdktrace.NewTracerProvider(opts...)
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	return tp, rec
}

// endedSpans waits for the middleware's finisher and returns the ended spans.
func endedSpans(t testing.TB, rec *tracetest.SpanRecorder) []sdktrace.ReadOnlySpan {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := instrument.Flush(ctx); err != nil {
		t.Fatalf("Flush: %v", err)
	}
	return rec.Ended()
}

func attrOf(s sdktrace.ReadOnlySpan, key attribute.Key) (attribute.Value, bool) {
	for _, kv := range s.Attributes() {
		if kv.Key == key {
			return kv.Value, true
		}
	}
	return attribute.Value{}, false
}

func eventAttr(e sdktrace.Event, key attribute.Key) (attribute.Value, bool) {
	for _, kv := range e.Attributes {
		if kv.Key == key {
			return kv.Value, true
		}
	}
	return attribute.Value{}, false
}

// engine is an OpenAI-compatible streaming server for tests: it answers
// every request with Tokens chat chunks, sleeping Gap(i) before token i,
// and records when each token's write began and returned.
type engine struct {
	Tokens int
	Gap    func(i int) time.Duration
	Usage  bool // send a final usage chunk
	Model  string

	mu        sync.Mutex
	pre, post []time.Time
}

func (e *engine) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(http.StatusOK)
	fl := http.NewResponseController(w)
	model := e.Model
	if model == "" {
		model = "test-model"
	}
	write := func(s string) {
		_, _ = w.Write([]byte(s))
		_ = fl.Flush()
	}
	write(fmt.Sprintf(`data: {"id":"chatcmpl-1","object":"chat.completion.chunk","model":%q,"choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}]}`+"\n\n", model))
	for i := 0; i < e.Tokens; i++ {
		if e.Gap != nil {
			if d := e.Gap(i); d > 0 {
				time.Sleep(d)
			}
		}
		line := fmt.Sprintf(`data: {"id":"chatcmpl-1","object":"chat.completion.chunk","model":%q,"choices":[{"index":0,"delta":{"content":"t%d "},"finish_reason":null}]}`+"\n\n", model, i)
		pre := time.Now()
		write(line)
		post := time.Now()
		e.mu.Lock()
		e.pre, e.post = append(e.pre, pre), append(e.post, post)
		e.mu.Unlock()
	}
	write(fmt.Sprintf(`data: {"id":"chatcmpl-1","object":"chat.completion.chunk","model":%q,"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}`+"\n\n", model))
	if e.Usage {
		write(fmt.Sprintf(`data: {"id":"chatcmpl-1","object":"chat.completion.chunk","model":%q,"choices":[],"usage":{"prompt_tokens":7,"completion_tokens":%d,"total_tokens":%d}}`+"\n\n", model, e.Tokens, e.Tokens+7))
	}
	write("data: [DONE]\n\n")
}

func chatBody(model string, stream, usage bool) string {
	so := ""
	if usage {
		so = `,"stream_options":{"include_usage":true}`
	}
	return fmt.Sprintf(`{"model":%q,"stream":%t%s,"max_tokens":512,"messages":[{"role":"user","content":"Say hello in four words."}]}`, model, stream, so)
}

func newChatRequest(url, body string) *http.Request {
	req, _ := http.NewRequest(http.MethodPost, url+"/v1/chat/completions", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer sk-secret-should-never-be-recorded")
	return req
}
