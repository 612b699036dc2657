package instrument_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/tokentrace/tokentrace/instrument"
	"github.com/tokentrace/tokentrace/instrument/tokentimes"
	"github.com/tokentrace/tokentrace/semconv"
)

func serveOne(t *testing.T, h http.Handler, body string) (*http.Response, string) {
	t.Helper()
	srv := httptest.NewServer(h)
	defer srv.Close()
	resp, err := srv.Client().Do(newChatRequest(srv.URL, body))
	if err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	return resp, string(b)
}

func TestHandlerStreamOneEventPerToken(t *testing.T) {
	tp, rec := newProvider(t, 10000)
	eng := &engine{Tokens: 40, Usage: true, Gap: func(i int) time.Duration {
		if i >= 20 && i < 30 {
			return 6 * time.Millisecond
		}
		return time.Millisecond
	}}
	_, got := serveOne(t, instrument.Handler(eng, instrument.WithTracerProvider(tp)), chatBody("test-model", true, true))
	if !strings.HasSuffix(got, "data: [DONE]\n\n") {
		t.Fatalf("response altered: %q", got[max(0, len(got)-60):])
	}
	spans := endedSpans(t, rec)
	if len(spans) != 1 {
		t.Fatalf("got %d spans, want 1", len(spans))
	}
	s := spans[0]
	if s.Name() != "chat test-model" || s.SpanKind() != trace.SpanKindServer {
		t.Errorf("span %q kind %v, want \"chat test-model\" server", s.Name(), s.SpanKind())
	}
	var tokenEvents []sdktrace.Event
	for _, e := range s.Events() {
		if e.Name == semconv.TokenEvent {
			tokenEvents = append(tokenEvents, e)
		}
	}
	if len(tokenEvents) != 40 {
		t.Fatalf("got %d token events, want 40", len(tokenEvents))
	}
	for i, e := range tokenEvents {
		idx, _ := eventAttr(e, semconv.TokenIndex)
		if idx.AsInt64() != int64(i) {
			t.Errorf("event %d has index %d", i, idx.AsInt64())
		}
		// Stamped when written, not at span end.
		if e.Time.Before(eng.pre[i]) || e.Time.After(eng.post[i]) {
			t.Errorf("token %d stamped %v, written between %v and %v", i, e.Time, eng.pre[i], eng.post[i])
		}
	}
	// The slow run shows in the event times.
	if gap := tokenEvents[25].Time.Sub(tokenEvents[24].Time); gap < 5*time.Millisecond {
		t.Errorf("gap 24→25 = %v, want ≥ 5ms", gap)
	}
	want := map[string]any{
		string(semconv.GenAIOperationName):     "chat",
		string(semconv.GenAIRequestModel):      "test-model",
		string(semconv.GenAIResponseModel):     "test-model",
		string(semconv.GenAIRequestStream):     true,
		string(semconv.GenAIUsageOutputTokens): int64(40),
		string(semconv.GenAIUsageInputTokens):  int64(7),
		string(semconv.Tokens):                 int64(40),
		string(semconv.TokensEstimated):        false,
		string(semconv.Chunks):                 int64(40),
		string(semconv.StreamOutcome):          semconv.OutcomeComplete,
		string(semconv.GenAIResponseID):        "chatcmpl-1",
		string(semconv.Ordinal):                int64(1),
	}
	for k, v := range want {
		got, ok := attrOf(s, attributeKey(k))
		if !ok || got.AsInterface() != v {
			t.Errorf("%s = %v (present %t), want %v", k, got.AsInterface(), ok, v)
		}
	}
	ttft, _ := attrOf(s, semconv.TTFTMillis)
	wantTTFT := tokenEvents[0].Time.Sub(s.StartTime())
	if d := time.Duration(ttft.AsFloat64()*1e6) - wantTTFT; d < -time.Microsecond || d > time.Microsecond {
		t.Errorf("ttft %vms, first event at %v", ttft.AsFloat64(), wantTTFT)
	}
	tpot, _ := attrOf(s, semconv.TPOTMillis)
	wantTPOT := tokenEvents[39].Time.Sub(tokenEvents[0].Time).Seconds() * 1000 / 39
	if d := tpot.AsFloat64() - wantTPOT; d < -1e-3 || d > 1e-3 {
		t.Errorf("tpot %v ms, want %v", tpot.AsFloat64(), wantTPOT)
	}
	if s.Status().Code == codes.Error {
		t.Errorf("status %v on a complete stream", s.Status())
	}
	// Never record credentials or text.
	for _, kv := range s.Attributes() {
		v := kv.Value.Emit()
		if strings.Contains(v, "sk-secret") || strings.Contains(v, "hello in four") || strings.Contains(v, "t1 ") {
			t.Errorf("attribute %s leaks request or response text: %q", kv.Key, v)
		}
	}
}

func TestCompactTimesRecoverEveryTokenWithDefaultEventLimit(t *testing.T) {
	// The SDK's default limit keeps the newest 128 events: 1,872 of 2,000
	// token events are dropped. The compact attribute must still give
	// every token's time to within 1 µs.
	tp, rec := newProvider(t, 0)
	eng := &engine{Tokens: 2000, Gap: func(i int) time.Duration {
		if i%500 == 499 {
			return 3 * time.Millisecond
		}
		return 0
	}}
	serveOne(t, instrument.Handler(eng, instrument.WithTracerProvider(tp)), chatBody("m", true, false))
	spans := endedSpans(t, rec)
	if len(spans) != 1 {
		t.Fatalf("got %d spans", len(spans))
	}
	s := spans[0]
	if s.DroppedEvents() != 2000-128 {
		t.Errorf("dropped events = %d, want %d (SDK default limit)", s.DroppedEvents(), 2000-128)
	}
	enc, ok := attrOf(s, semconv.TokenTimes)
	if !ok {
		t.Fatal("no compact token times")
	}
	offs, err := tokentimes.Decode(enc.AsString())
	if err != nil {
		t.Fatal(err)
	}
	if len(offs) != 2000 {
		t.Fatalf("decoded %d times, want 2000", len(offs))
	}
	for i, off := range offs {
		at := s.StartTime().Add(off)
		// Written between pre and post; truncation to µs may put it up to
		// 1 µs before pre.
		if at.Before(eng.pre[i].Add(-time.Microsecond)) || at.After(eng.post[i]) {
			t.Fatalf("token %d decoded at %v, written in [%v, %v]", i, at, eng.pre[i], eng.post[i])
		}
	}
	// And against the kept events' exact timestamps: within 1 µs.
	kept := 0
	for _, e := range s.Events() {
		if e.Name != semconv.TokenEvent {
			continue
		}
		idx, _ := eventAttr(e, semconv.TokenIndex)
		d := s.StartTime().Add(offs[idx.AsInt64()]).Sub(e.Time)
		if d > 0 || d <= -time.Microsecond {
			t.Errorf("token %d: compact differs from event by %v", idx.AsInt64(), d)
		}
		kept++
	}
	if kept != 128 {
		t.Errorf("kept %d token events, want 128", kept)
	}
	if n := len(enc.AsString()); float64(n)/2000 > 4 {
		t.Errorf("compact encoding %d bytes = %.2f B/token, want ≤ 4", n, float64(n)/2000)
	}
}

func TestHandlerNonStreaming(t *testing.T) {
	tp, rec := newProvider(t, 0)
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"id":"cmpl-9","object":"chat.completion","model":"m-2024","choices":[{"index":0,"message":{"role":"assistant","content":"hi"},"finish_reason":"length"}],"usage":{"prompt_tokens":11,"completion_tokens":22,"total_tokens":33}}`)
	})
	resp, _ := serveOne(t, instrument.Handler(h, instrument.WithTracerProvider(tp)), chatBody("m", false, false))
	if resp.StatusCode != 200 {
		t.Fatal(resp.Status)
	}
	s := endedSpans(t, rec)[0]
	for _, e := range s.Events() {
		if e.Name == semconv.TokenEvent {
			t.Fatal("token event on a non-streaming response")
		}
	}
	for k, v := range map[string]any{
		string(semconv.GenAIUsageOutputTokens): int64(22),
		string(semconv.GenAIUsageInputTokens):  int64(11),
		string(semconv.GenAIResponseModel):     "m-2024",
		string(semconv.StreamOutcome):          semconv.OutcomeNotStreamed,
		string(semconv.GenAIRequestStream):     false,
	} {
		if got, _ := attrOf(s, attributeKey(k)); got.AsInterface() != v {
			t.Errorf("%s = %v, want %v", k, got.AsInterface(), v)
		}
	}
	fr, _ := attrOf(s, semconv.GenAIResponseFinishReasons)
	if got := fr.AsStringSlice(); len(got) != 1 || got[0] != "length" {
		t.Errorf("finish reasons %v", got)
	}
}
