package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"go.uber.org/goleak"

	"github.com/tokentrace/tokentrace/internal/runtest"
	"github.com/tokentrace/tokentrace/internal/sim"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// client does not keep connections, so no goroutine outlives a test.
var client = &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}

// start runs the program with args (plus -addr 127.0.0.1:0) and waits for
// its address.
func start(t *testing.T, args ...string) *runtest.Program {
	t.Helper()
	return runtest.Start(t, run, append([]string{"-addr", "127.0.0.1:0"}, args...)...)
}

// stream posts a streamed request and returns its content chunks and
// whether it ended with [DONE]. first, if not nil, is closed at the first
// content chunk. It may run on any goroutine.
func stream(url, path, body string, header http.Header, first chan<- struct{}) (chunks int, done bool, err error) {
	req, err := http.NewRequest(http.MethodPost, url+path, strings.NewReader(body))
	if err != nil {
		return 0, false, err
	}
	req.Header.Set("Content-Type", "application/json")
	for k, v := range header {
		req.Header[k] = v
	}
	resp, err := client.Do(req)
	if err != nil {
		return 0, false, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "text/event-stream" {
		b, _ := io.ReadAll(resp.Body)
		return 0, false, fmt.Errorf("status %d %s: %s", resp.StatusCode, resp.Header.Get("Content-Type"), b)
	}
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		data, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok {
			continue
		}
		if data == "[DONE]" {
			return chunks, true, nil
		}
		var c struct {
			Choices []struct {
				Text  string `json:"text"`
				Delta struct {
					Content string `json:"content"`
				} `json:"delta"`
			} `json:"choices"`
		}
		if err := json.Unmarshal([]byte(data), &c); err != nil {
			return chunks, false, fmt.Errorf("chunk %q: %v", data, err)
		}
		if len(c.Choices) > 0 && c.Choices[0].Delta.Content+c.Choices[0].Text != "" {
			if chunks == 0 && first != nil {
				close(first)
			}
			chunks++
		}
	}
	return chunks, false, nil
}

func get(t *testing.T, url string) []byte {
	t.Helper()
	resp, err := client.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %d %v", url, resp.StatusCode, err)
	}
	return b
}

func TestServesStreamsMetricsAndTruth(t *testing.T) {
	truthPath := filepath.Join(t.TempDir(), "truth.jsonl")
	e := start(t, "-profile", "fast", "-time-scale", "0.2", "-truth", truthPath, "-model", "sim-small")

	const tid = "4bf92f3577b34da6a3ce929d0e0e4736"
	h := http.Header{"Traceparent": {"00-" + tid + "-00f067aa0ba902b7-01"}}
	chunks, done, err := stream(e.URL, "/v1/chat/completions",
		`{"model":"sim-small","max_tokens":20,"stream":true,"stream_options":{"include_usage":true},"messages":[{"role":"user","content":"hello there"}]}`, h, nil)
	if chunks != 20 || !done || err != nil {
		t.Errorf("chat stream: %d tokens, [DONE] %v, %v; want 20, true", chunks, done, err)
	}
	chunks, done, err = stream(e.URL, "/v1/completions", `{"model":"sim-small","max_tokens":5,"stream":true,"prompt":"hi"}`, nil, nil)
	if chunks != 5 || !done || err != nil {
		t.Errorf("completions stream: %d tokens, [DONE] %v, %v; want 5, true", chunks, done, err)
	}

	var models struct {
		Data []struct {
			ID string `json:"id"`
		} `json:"data"`
	}
	if err := json.Unmarshal(get(t, e.URL+"/v1/models"), &models); err != nil || len(models.Data) != 1 || models.Data[0].ID != "sim-small" {
		t.Errorf("/v1/models: %+v %v", models, err)
	}
	get(t, e.URL+"/health")
	p := expfmt.NewTextParser(model.UTF8Validation)
	mfs, err := p.TextToMetricFamilies(bytes.NewReader(get(t, e.URL+"/metrics")))
	if err != nil {
		t.Fatalf("/metrics does not parse: %v", err)
	}
	for _, name := range []string{"vllm:num_requests_running", "vllm:num_requests_waiting", "vllm:kv_cache_usage_perc",
		"vllm:num_preemptions_total", "vllm:time_to_first_token_seconds", "vllm:inter_token_latency_seconds"} {
		if mfs[name] == nil {
			t.Errorf("/metrics lacks %s", name)
		}
	}
	if mf := mfs["vllm:request_success_total"]; mf == nil || mf.GetMetric()[0].GetCounter().GetValue() != 2 {
		t.Errorf("vllm:request_success_total = %v, want 2", mf)
	}

	if _, err := e.Stop(t, 5*time.Second); err != nil {
		t.Fatalf("run after interrupt: %v", err)
	}
	data, err := os.ReadFile(truthPath)
	if err != nil {
		t.Fatal(err)
	}
	var recs []sim.TruthRecord
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		var r sim.TruthRecord
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Fatalf("truth line %q: %v", line, err)
		}
		recs = append(recs, r)
	}
	if len(recs) != 2 {
		t.Fatalf("%d truth records, want one per finished request (2)", len(recs))
	}
	addr := strings.TrimPrefix(e.URL, "http://")
	if r := recs[0]; r.Schema != sim.TruthSchema || r.Tokens != 20 || r.TraceID != tid || r.Instance != addr {
		t.Errorf("truth record %+v, want schema %s, 20 tokens, trace %s, instance %s", r, sim.TruthSchema, tid, addr)
	}
	if r := recs[1]; r.Tokens != 5 || r.TraceID != "" {
		t.Errorf("truth record %+v", r)
	}
	if !strings.Contains(e.Stderr.String(), "engine ready") {
		t.Errorf("stderr: %s", e.Stderr.String())
	}
}

// An interrupt lets the streams in flight finish, then run returns nil.
func TestInterruptDrainsStreams(t *testing.T) {
	e := start(t, "-profile", "13b", "-time-scale", "0.5")
	first := make(chan struct{})
	type result struct {
		chunks int
		done   bool
		err    error
	}
	res := make(chan result, 1)
	go func() {
		n, done, err := stream(e.URL, "/v1/chat/completions", `{"model":"sim-llama","max_tokens":40,"stream":true,"messages":[{"role":"user","content":"x"}]}`, nil, first)
		res <- result{n, done, err}
	}()
	<-first
	if _, err := e.Stop(t, 10*time.Second); err != nil {
		t.Fatal(err)
	}
	if r := <-res; r.chunks != 40 || !r.done || r.err != nil {
		t.Errorf("stream in flight at the interrupt: %d tokens, [DONE] %v, %v; want all 40", r.chunks, r.done, r.err)
	}
}

// Streams still running at -shutdown-timeout are cut.
func TestShutdownTimeoutCutsStreams(t *testing.T) {
	e := start(t, "-profile", "13b", "-shutdown-timeout", "100ms")
	first := make(chan struct{})
	res := make(chan bool, 1)
	go func() {
		_, done, _ := stream(e.URL, "/v1/chat/completions", `{"model":"sim-llama","max_tokens":1000,"stream":true,"messages":[{"role":"user","content":"x"}]}`, nil, first)
		res <- done
	}()
	<-first
	begin := time.Now()
	if _, err := e.Stop(t, 5*time.Second); err != nil {
		t.Fatal(err)
	}
	if el := time.Since(begin); el > 2*time.Second {
		t.Errorf("shutdown took %v with -shutdown-timeout 100ms", el)
	}
	if <-res {
		t.Error("a 15 s stream finished within the shutdown")
	}
}

func TestParseFlags(t *testing.T) {
	cfg, o, err := parseFlags(nil, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	// No scenario: the 13b profile and no effect.
	if cfg.Profile.Name != "13b" || cfg.Profile.SpikeProb != 0 || cfg.Prefill.Chunked || cfg.KV.Blocks != 0 ||
		cfg.GC.Period != 0 || cfg.Warmup.Requests != 0 || cfg.Model != "sim-llama" || cfg.Instance != "" || cfg.TimeScale != 1 ||
		o.addr != defaultAddr || o.truth != "" {
		t.Errorf("defaults: %+v %+v", cfg, o)
	}
	if got := effects(cfg); got != "unchunked prefill (a newcomer's whole prompt in one step)" {
		t.Errorf("effects of the default: %q", got)
	}

	// A scenario, with flags overriding some of it.
	cfg, _, err = parseFlags([]string{"-scenario", "kv-swap", "-kv-blocks", "300", "-profile", "fast", "-seed", "9"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.KV.Blocks != 300 || !cfg.KV.Swap || cfg.KV.SwapPerBlock != time.Millisecond || cfg.KV.BlockSize != 16 ||
		!cfg.Prefill.Chunked || cfg.Prefill.TokenBudget != 2048 || cfg.Profile.Name != "fast" || cfg.Profile.SpikeProb != 0 ||
		cfg.Seed != 9 || cfg.Instance != "" {
		t.Errorf("kv-swap with overrides: %+v", cfg)
	}
	if got := effects(cfg); !strings.Contains(got, "swap 1ms/block") || !strings.Contains(got, "chunked prefill (2048") {
		t.Errorf("effects: %q", got)
	}

	// A scenario file; -spikes keeps the profile's slow steps.
	path := filepath.Join(t.TempDir(), "my.json")
	if err := os.WriteFile(path, []byte(`{"name":"my","seed":5,"engine":{"model":"m","profile":"llamacpp-cpu",
		"gc":{"period":"1s","min_pause":"50ms","max_pause":"80ms"}},"load":{"rate":1,"requests":1,"mix":[{"name":"q","weight":1,"prompt_tokens":4,"max_tokens":4}]}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, _, err = parseFlags([]string{"-scenario", path, "-spikes", "-gc-max", "90ms"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Model != "m" || cfg.Seed != 5 || cfg.Profile.Name != "llamacpp-cpu" || cfg.Profile.SpikeProb == 0 ||
		cfg.GC.Period != time.Second || cfg.GC.MinPause != 50*time.Millisecond || cfg.GC.MaxPause != 90*time.Millisecond {
		t.Errorf("scenario file: %+v", cfg)
	}
}

func TestBadFlags(t *testing.T) {
	for _, args := range [][]string{
		{"-nosuchflag"},
		{"-profile", "70b"},
		{"-scenario", "nosuch"},
		{"-scenario", "/nonexistent/file.json"},
		{"-time-scale", "0"},
		{"-time-scale", "-1"},
		{"-time-scale", "NaN"},
		{"-token-budget", "-5"},
		{"-kv-blocks", "-1"},
		{"-gc-period", "1s", "-gc-min", "200ms", "-gc-max", "100ms"},
		{"-gc-jitter", "-1s"},
		{"-warmup-slowdown", "-0.5"},
		{"-seed", "-1"},
		{"-addr", "not an address"},
		{"extra"},
	} {
		var stdout, stderr bytes.Buffer
		if err := run(context.Background(), args, &stdout, &stderr); err == nil {
			t.Errorf("run(%q) accepted", args)
		}
		if stdout.Len() != 0 {
			t.Errorf("run(%q) printed %q", args, stdout.String())
		}
	}
	var stdout, stderr bytes.Buffer
	if err := run(context.Background(), []string{"-h"}, &stdout, &stderr); err != nil || !strings.Contains(stderr.String(), "-gc-period") {
		t.Errorf("-h: %v, usage %q", err, stderr.String())
	}
}
