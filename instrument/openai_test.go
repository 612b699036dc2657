package instrument_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/tokentrace/tokentrace/instrument"
	"github.com/tokentrace/tokentrace/semconv"
)

// oaKey is the API key the official client sends; it must reach the engine
// and never the telemetry.
const oaKey = "sk-oai-test-key-5f1e0c9b"

// oaEngine is the engine helper behind a check of the API key.
type oaEngine struct {
	eng *engine

	mu    sync.Mutex
	auths []string
}

func (o *oaEngine) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	o.mu.Lock()
	o.auths = append(o.auths, r.Header.Get("Authorization"))
	o.mu.Unlock()
	if r.Method != http.MethodPost || r.URL.Path != "/v1/chat/completions" {
		http.Error(w, "unexpected "+r.Method+" "+r.URL.Path, http.StatusNotFound)
		return
	}
	o.eng.ServeHTTP(w, r)
	// Like a real server, end the response a little after [DONE]: the
	// client, which stops at [DONE], closes the body before its EOF.
	time.Sleep(50 * time.Millisecond)
}

func (o *oaEngine) checkKeySent(t *testing.T) {
	t.Helper()
	o.mu.Lock()
	defer o.mu.Unlock()
	if len(o.auths) != 1 || o.auths[0] != "Bearer "+oaKey {
		t.Errorf("engine got Authorization %q, want the client's key once", o.auths)
	}
}

// oaStream streams a chat completion with the official client and returns
// the concatenated text and the usage's completion tokens.
func oaStream(t *testing.T, client openai.Client) (string, int64) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	stream := client.Chat.Completions.NewStreaming(ctx, openai.ChatCompletionNewParams{
		Model:         "test-model",
		Messages:      []openai.ChatCompletionMessageParamUnion{openai.UserMessage("Say hello in four words.")},
		MaxTokens:     openai.Int(64),
		StreamOptions: openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)},
	})
	defer stream.Close()
	var text strings.Builder
	var usage int64
	for stream.Next() {
		c := stream.Current()
		for _, ch := range c.Choices {
			text.WriteString(ch.Delta.Content)
		}
		if c.Usage.CompletionTokens > 0 {
			usage = c.Usage.CompletionTokens
		}
	}
	if err := stream.Err(); err != nil {
		t.Fatalf("stream: %v", err)
	}
	return text.String(), usage
}

// oaCheckSpan checks the one span of an openai-go stream of n tokens.
func oaCheckSpan(t *testing.T, s sdktrace.ReadOnlySpan, kind trace.SpanKind, n int) {
	t.Helper()
	if s.SpanKind() != kind || s.Name() != "chat test-model" {
		t.Errorf("span %q kind %v, want \"chat test-model\" %v", s.Name(), s.SpanKind(), kind)
	}
	evs := pxEvents(s, semconv.TokenEvent)
	if len(evs) != n {
		t.Errorf("got %d token events, want %d", len(evs), n)
	}
	if len(s.Events()) != n {
		t.Errorf("got %d events in all, want only the %d token events: %v", len(s.Events()), n, s.Events())
	}
	for i, e := range evs {
		if idx, _ := eventAttr(e, semconv.TokenIndex); idx.AsInt64() != int64(i) {
			t.Errorf("token event %d has index %d", i, idx.AsInt64())
		}
	}
	pxWant(t, s, map[attribute.Key]any{
		semconv.GenAIRequestStream:     true,
		semconv.GenAIRequestModel:      "test-model",
		semconv.GenAIRequestMaxTokens:  int64(64),
		semconv.GenAIUsageOutputTokens: int64(n),
		semconv.GenAIUsageInputTokens:  int64(7),
		semconv.Tokens:                 int64(n),
		semconv.TokensEstimated:        false,
		semconv.StreamOutcome:          semconv.OutcomeComplete,
		semconv.ErrorType:              nil,
	})
	if s.Status().Code != codes.Unset {
		t.Errorf("status %v on a complete stream", s.Status())
	}
	// The API key appears nowhere.
	leak := func(where, v string) {
		if strings.Contains(v, oaKey) || strings.Contains(v, "sk-oai") {
			t.Errorf("%s leaks the API key: %q", where, v)
		}
	}
	leak("span name", s.Name())
	leak("status", s.Status().Description)
	for _, kv := range s.Attributes() {
		leak("attribute "+string(kv.Key), kv.Value.Emit())
	}
	for _, e := range s.Events() {
		leak("event name", e.Name)
		for _, kv := range e.Attributes {
			leak("event attribute "+string(kv.Key), kv.Value.Emit())
		}
	}
	for _, l := range s.Links() {
		for _, kv := range l.Attributes {
			leak("link attribute "+string(kv.Key), kv.Value.Emit())
		}
	}
}

// oaWantText is the text of the engine helper's n tokens.
func oaWantText(n int) string {
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, "t%d ", i)
	}
	return b.String()
}

func TestOpenAIClientThroughInstrumentedGateway(t *testing.T) {
	tp, rec := newProvider(t, 10000)
	tr := instrument.NewTracker()
	const n = 30
	oe := &oaEngine{eng: &engine{Tokens: n, Usage: true, Gap: func(int) time.Duration { return time.Millisecond }}}
	gw, _ := pxGateway(t, oe, tp, tr)

	client := openai.NewClient(
		option.WithBaseURL(gw.URL+"/v1/"),
		option.WithAPIKey(oaKey),
		option.WithHTTPClient(gw.Client()),
		option.WithMaxRetries(0),
	)
	text, usage := oaStream(t, client)
	if text != oaWantText(n) {
		t.Errorf("client got text %q, want %q", text, oaWantText(n))
	}
	if usage != n {
		t.Errorf("client got usage %d, want %d", usage, n)
	}
	oe.checkKeySent(t)

	spans := pxSpans(t, rec, 1)
	if len(spans) != 1 {
		t.Fatalf("got %d spans, want 1", len(spans))
	}
	oaCheckSpan(t, spans[0], trace.SpanKindServer, n)
}

func TestOpenAIClientWithInstrumentedTransport(t *testing.T) {
	tp, rec := newProvider(t, 10000)
	const n = 30
	oe := &oaEngine{eng: &engine{Tokens: n, Usage: true, Gap: func(int) time.Duration { return time.Millisecond }}}
	srv := httptest.NewServer(oe)
	defer srv.Close()

	client := openai.NewClient(
		option.WithBaseURL(srv.URL+"/v1/"),
		option.WithAPIKey(oaKey),
		option.WithHTTPClient(&http.Client{Transport: instrument.Transport(nil, instrument.WithTracerProvider(tp))}),
		option.WithMaxRetries(0),
	)
	text, usage := oaStream(t, client)
	if text != oaWantText(n) {
		t.Errorf("client got text %q, want %q", text, oaWantText(n))
	}
	if usage != n {
		t.Errorf("client got usage %d, want %d", usage, n)
	}
	oe.checkKeySent(t)

	spans := pxSpans(t, rec, 1)
	if len(spans) != 1 {
		t.Fatalf("got %d spans, want 1", len(spans))
	}
	oaCheckSpan(t, spans[0], trace.SpanKindClient, n)
}
