package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/tokentrace/tokentrace/internal/loadgen/loadgentest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func fastServer(t *testing.T) *loadgentest.Server {
	srv := loadgentest.NewServer(func(loadgentest.Request) loadgentest.Script {
		return loadgentest.Script{FirstDelay: 2 * time.Millisecond, Gaps: loadgentest.Gaps(9, time.Millisecond)}
	})
	t.Cleanup(srv.Close)
	return srv
}

func TestRunPrintsSummary(t *testing.T) {
	srv := fastServer(t)
	dir := t.TempDir()
	jsonPath, recPath := filepath.Join(dir, "summary.json"), filepath.Join(dir, "records.jsonl")
	var stdout, stderr bytes.Buffer
	err := run(context.Background(), []string{
		"-url", srv.URL, "-rate", "200", "-n", "12", "-duration", "60s",
		"-mix", "qa=0.7,analysis=0.25,intruder=0.05", "-seed", "1", "-concurrency", "4",
		"-H", "Authorization: Bearer k", "-json", jsonPath, "-records", recPath,
	}, &stdout, &stderr)
	if err != nil {
		t.Fatalf("run: %v\n%s", err, stderr.String())
	}
	out := stdout.String()
	for _, want := range []string{
		"============ Serving Benchmark Result ============\n",
		"Successful requests:                     12\n",
		"Failed requests:                         0\n",
		"Stopped by:                              requests\n",
		"---------------Time to First Token----------------\n",
		"-----Time per Output Token (excl. 1st token)------\n",
		"---------------Inter-token Latency----------------\n",
		"P99.99 ITL (ms):",
		"==================================================\n",
		"Per request type (ms):",
		"  qa ",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("stdout lacks %q:\n%s", want, out)
		}
	}
	if stderr.Len() != 0 {
		t.Errorf("stderr is not a terminal, yet got %q", stderr.String())
	}
	if srv.MaxInFlight() > 4 {
		t.Errorf("-concurrency 4, but %d in flight", srv.MaxInFlight())
	}
	for _, q := range srv.Requests() {
		if q.Header.Get("Authorization") != "Bearer k" || q.Model != "sim-llama" || !q.Stream || !q.IncludeUsage {
			t.Errorf("request: %+v", q)
		}
	}
	var sum struct {
		Schema     string `json:"schema"`
		Successful int    `json:"successful"`
	}
	data, err := os.ReadFile(jsonPath)
	if err != nil || json.Unmarshal(data, &sum) != nil || sum.Successful != 12 || sum.Schema != "tokentrace.loadgen/v1" {
		t.Errorf("-json file: %v %s", err, data)
	}
	recs, err := os.ReadFile(recPath)
	if lines := strings.Count(string(recs), "\n"); err != nil || lines != 12 {
		t.Errorf("-records: %d lines, %v", lines, err)
	}
	if strings.Contains(string(recs), "Bearer") {
		t.Error("records hold a header value")
	}
}

func TestRunJSONToStdout(t *testing.T) {
	srv := fastServer(t)
	var stdout, stderr bytes.Buffer
	err := run(context.Background(), []string{"-url", srv.URL, "-n", "3", "-rate", "inf", "-json", "-",
		"-mix", "qa", "-stream=false", "-endpoint", "completions", "-arrival", "fixed"}, &stdout, &stderr)
	if err != nil {
		t.Fatal(err)
	}
	var sum struct {
		Successful int `json:"successful"`
		TTFT       struct {
			Count int `json:"count"`
		} `json:"ttft_ms"`
		E2E struct {
			Count int `json:"count"`
		} `json:"e2e_ms"`
	}
	if err := json.Unmarshal(stdout.Bytes(), &sum); err != nil {
		t.Fatalf("stdout is not the JSON summary: %v\n%s", err, stdout.String())
	}
	if sum.Successful != 3 || sum.TTFT.Count != 0 || sum.E2E.Count != 3 {
		t.Errorf("non-streamed run: %+v", sum)
	}
	for _, q := range srv.Requests() {
		if q.Path != "/v1/completions" || q.Stream {
			t.Errorf("request: %+v", q)
		}
	}
}

func TestRunBadFlags(t *testing.T) {
	for _, args := range [][]string{
		{"-nosuchflag"},
		{"-rate", "fast"},
		{"-rate", "0"},
		{"-rate", "NaN"},
		{"-n", "0"},
		{"-mix", "qa=1,chat=2"},
		{"-arrival", "uniform"},
		{"-endpoint", "embeddings"},
		{"-url", "localhost"},
		{"-H", "no colon"},
		{"extra-arg"},
	} {
		var stdout, stderr bytes.Buffer
		if err := run(context.Background(), args, &stdout, &stderr); err == nil {
			t.Errorf("run(%q) accepted", args)
		}
		if stdout.Len() != 0 {
			t.Errorf("run(%q) printed a summary", args)
		}
	}
	var stdout, stderr bytes.Buffer
	if err := run(context.Background(), []string{"-h"}, &stdout, &stderr); err != nil || !strings.Contains(stderr.String(), "-mix") {
		t.Errorf("-h: %v, usage %q", err, stderr.String())
	}
}

func TestRunAllFailed(t *testing.T) {
	srv := loadgentest.NewServer(func(loadgentest.Request) loadgentest.Script {
		return loadgentest.Script{Status: 503, ErrorMessage: "no capacity"}
	})
	defer srv.Close()
	var stdout, stderr bytes.Buffer
	err := run(context.Background(), []string{"-url", srv.URL, "-n", "4", "-rate", "inf"}, &stdout, &stderr)
	if err == nil || !strings.Contains(err.Error(), "all 4 requests failed") || !strings.Contains(err.Error(), "no capacity") {
		t.Errorf("err = %v, want all 4 requests failed with the message", err)
	}
	if !strings.Contains(stdout.String(), "Failed requests:                         4") {
		t.Errorf("the summary is printed all the same:\n%s", stdout.String())
	}
}

// An interrupt (ctx) stops the arrivals, lets the requests in flight
// finish, and prints the summary.
func TestRunInterruptDrains(t *testing.T) {
	srv := loadgentest.NewServer(func(loadgentest.Request) loadgentest.Script {
		return loadgentest.Script{FirstDelay: 5 * time.Millisecond, Gaps: loadgentest.Gaps(20, 10*time.Millisecond)}
	})
	defer srv.Close()
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(150*time.Millisecond, cancel)
	var stdout, stderr bytes.Buffer
	start := time.Now()
	err := run(ctx, []string{"-url", srv.URL, "-rate", "50", "-n", "100000", "-mix", "qa", "-json", "-"}, &stdout, &stderr)
	if err != nil {
		t.Fatal(err)
	}
	if el := time.Since(start); el > 15*time.Second { // 2000 s without the interrupt
		t.Errorf("took %v", el)
	}
	var sum struct {
		Requests   int    `json:"requests"`
		Successful int    `json:"successful"`
		Stopped    string `json:"stopped"`
	}
	if err := json.Unmarshal(stdout.Bytes(), &sum); err != nil {
		t.Fatal(err)
	}
	// Every request in flight at the interrupt ran to its end.
	if sum.Stopped != "stopped" || sum.Requests == 0 || sum.Successful != sum.Requests {
		t.Errorf("summary after interrupt: %+v", sum)
	}
	if !strings.Contains(stderr.String(), "stopping") {
		t.Errorf("stderr = %q", stderr.String())
	}
}

func TestRunInterruptTextSummary(t *testing.T) {
	srv := fastServer(t)
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(100*time.Millisecond, cancel)
	var stdout, stderr bytes.Buffer
	if err := run(ctx, []string{"-url", srv.URL, "-rate", "50", "-n", "100000", "-mix", "qa"}, &stdout, &stderr); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(stdout.String(), "Stopped by:                              stopped") ||
		!strings.Contains(stdout.String(), "Failed requests:                         0") ||
		strings.Contains(stdout.String(), "Canceled requests") {
		t.Errorf("summary after interrupt:\n%s", stdout.String())
	}
	if !strings.Contains(stderr.String(), "stopping") {
		t.Errorf("stderr = %q", stderr.String())
	}
}
