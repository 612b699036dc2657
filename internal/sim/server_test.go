package sim

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

func startServer(t *testing.T, cfg Config) (*Engine, *httptest.Server) {
	t.Helper()
	if cfg.Profile.Fixed == 0 {
		cfg.Profile = testProfile
	}
	cfg.TimeScale = 0.1
	e, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	go e.Run(ctx)
	srv := httptest.NewServer(NewServer(e))
	t.Cleanup(func() { srv.Close(); cancel(); e.Wait() })
	return e, srv
}

func post(t *testing.T, url, path, body string) (*http.Response, []byte) {
	t.Helper()
	resp, err := http.Post(url+path, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, b
}

func TestServerRejectsBadRequestsOpenAIStyle(t *testing.T) {
	_, srv := startServer(t, Config{Model: "sim-llama"})
	long := strings.Repeat("x", 4*9000)
	tests := []struct {
		name, path, body string
		status           int
		param, code      string
	}{
		{"invalid json", "/v1/chat/completions", `{"model":`, 400, "", ""},
		{"unknown model", "/v1/chat/completions", `{"model":"gpt-9","messages":[{"role":"user","content":"hi"}]}`, 404, "model", "model_not_found"},
		{"max_tokens zero", "/v1/chat/completions", `{"model":"sim-llama","max_tokens":0,"messages":[{"role":"user","content":"hi"}]}`, 400, "max_tokens", ""},
		{"max_tokens negative", "/v1/completions", `{"model":"sim-llama","max_tokens":-3,"prompt":"hi"}`, 400, "max_tokens", ""},
		{"no messages", "/v1/chat/completions", `{"model":"sim-llama","messages":[]}`, 400, "messages", ""},
		{"oversized prompt", "/v1/chat/completions", `{"model":"sim-llama","messages":[{"role":"user","content":"` + long + `"}]}`, 400, "messages", "context_length_exceeded"},
		{"bad prompt type", "/v1/completions", `{"model":"sim-llama","prompt":42}`, 400, "prompt", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp, b := post(t, srv.URL, tt.path, tt.body)
			if resp.StatusCode != tt.status {
				t.Fatalf("status %d, want %d: %s", resp.StatusCode, tt.status, b)
			}
			var e struct {
				Error struct {
					Message string  `json:"message"`
					Type    string  `json:"type"`
					Param   *string `json:"param"`
					Code    *string `json:"code"`
				} `json:"error"`
			}
			if err := json.Unmarshal(b, &e); err != nil || e.Error.Message == "" || e.Error.Type == "" {
				t.Fatalf("not an OpenAI error body: %s", b)
			}
			if tt.param != "" && (e.Error.Param == nil || *e.Error.Param != tt.param) {
				t.Errorf("param %v, want %s", e.Error.Param, tt.param)
			}
			if tt.code != "" && (e.Error.Code == nil || *e.Error.Code != tt.code) {
				t.Errorf("code %v, want %s", e.Error.Code, tt.code)
			}
		})
	}
}

func TestServerStreamsOpenAIChunksWithUsage(t *testing.T) {
	_, srv := startServer(t, Config{})
	resp, err := http.Post(srv.URL+"/v1/chat/completions", "application/json", strings.NewReader(
		`{"model":"sim-llama","stream":true,"stream_options":{"include_usage":true},"max_tokens":12,"messages":[{"role":"user","content":"abcdefghijklmnop"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("content type %q", ct)
	}
	sc := bufio.NewScanner(resp.Body)
	var content, finish int
	var done bool
	var u *usage
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, "data: ") {
			continue
		}
		data := strings.TrimPrefix(line, "data: ")
		if data == "[DONE]" {
			done = true
			continue
		}
		var c struct {
			Choices []struct {
				Delta struct {
					Content string `json:"content"`
				} `json:"delta"`
				FinishReason *string `json:"finish_reason"`
			} `json:"choices"`
			Usage *usage `json:"usage"`
		}
		if err := json.Unmarshal([]byte(data), &c); err != nil {
			t.Fatalf("bad chunk %q: %v", data, err)
		}
		for _, ch := range c.Choices {
			if ch.Delta.Content != "" {
				content++
			}
			if ch.FinishReason != nil {
				finish++
			}
		}
		if c.Usage != nil {
			u = c.Usage
		}
	}
	if content != 12 || finish != 1 || !done {
		t.Fatalf("content chunks %d, finish %d, done %t", content, finish, done)
	}
	if u == nil || u.CompletionTokens != 12 || u.PromptTokens != 4 {
		t.Fatalf("usage %+v, want 4 prompt (16 chars / 4) and 12 completion tokens", u)
	}
}

func TestServerNonStreamingAndModels(t *testing.T) {
	_, srv := startServer(t, Config{})
	resp, b := post(t, srv.URL, "/v1/completions", `{"model":"sim-llama","max_tokens":5,"prompt":"hello"}`)
	if resp.StatusCode != 200 {
		t.Fatalf("%d %s", resp.StatusCode, b)
	}
	var c struct {
		Choices []struct {
			Text string `json:"text"`
		} `json:"choices"`
		Usage usage `json:"usage"`
	}
	if err := json.Unmarshal(b, &c); err != nil || len(c.Choices) != 1 || c.Choices[0].Text == "" || c.Usage.CompletionTokens != 5 {
		t.Fatalf("body %s (%v)", b, err)
	}
	r, err := http.Get(srv.URL + "/v1/models")
	if err != nil {
		t.Fatal(err)
	}
	mb, _ := io.ReadAll(r.Body)
	r.Body.Close()
	if !strings.Contains(string(mb), `"id":"sim-llama"`) {
		t.Fatalf("models: %s", mb)
	}
}

func TestMetricsEndpointIsVLLMCompatible(t *testing.T) {
	prof := testProfile
	prof.MaxContext = 640
	_, srv := startServer(t, Config{Profile: prof, KV: KVConfig{Blocks: 40}, GC: GCConfig{Period: 50 * time.Millisecond, MinPause: 5 * time.Millisecond, MaxPause: 5 * time.Millisecond}})
	done := make(chan struct{}, 2)
	for i := 0; i < 2; i++ {
		go func() {
			post(t, srv.URL, "/v1/completions", `{"model":"sim-llama","max_tokens":150,"stream":true,"prompt":"`+strings.Repeat("w", 800)+`"}`)
			done <- struct{}{}
		}()
		time.Sleep(20 * time.Millisecond)
	}
	<-done
	<-done
	resp, err := http.Get(srv.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	p := expfmt.NewTextParser(model.UTF8Validation)
	mfs, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatalf("metrics do not parse: %v", err)
	}
	for _, name := range []string{"vllm:num_preemptions_total", "vllm:num_requests_running", "vllm:num_requests_waiting", "vllm:kv_cache_usage_perc", "python_gc_collections_total", "vllm:inter_token_latency_seconds"} {
		if mfs[name] == nil {
			t.Errorf("metric %s missing", name)
		}
	}
	if v := mfs["vllm:num_preemptions_total"].GetMetric()[0].GetCounter().GetValue(); v < 1 {
		t.Errorf("no preemption counted with a 640-token cache and two 350-token requests: %v", v)
	}
	var gen2 float64
	for _, m := range mfs["python_gc_collections_total"].GetMetric() {
		for _, l := range m.GetLabel() {
			if l.GetName() == "generation" && l.GetValue() == "2" {
				gen2 = m.GetCounter().GetValue()
			}
		}
	}
	if gen2 < 1 {
		t.Errorf("python_gc_collections_total{generation=\"2\"} = %v, want ≥ 1", gen2)
	}
}
