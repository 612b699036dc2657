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

	"github.com/tokentrace/tokentrace/analyzer/report"
)

func runCmd(t *testing.T, args ...string) (string, string, int) {
	t.Helper()
	var out, errb bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	err := run(ctx, args, &out, &errb)
	code := exitCode(err, &errb)
	return out.String(), errb.String(), code
}

func TestHelpAndUsageErrors(t *testing.T) {
	out, _, code := runCmd(t, "help")
	if code != exitOK || !strings.Contains(out, "analyze") || !strings.Contains(out, "demo") {
		t.Fatalf("help: code %d\n%s", code, out)
	}
	out, _, code = runCmd(t, "analyze", "-h")
	if code != exitOK || !strings.Contains(out, "-jaeger") || !strings.Contains(out, "-fail-on-degraded") {
		t.Fatalf("analyze -h: code %d\n%s", code, out)
	}
	for _, tt := range []struct {
		args []string
		code int
		msg  string
	}{
		{nil, exitUsage, "no command"},
		{[]string{"frobnicate"}, exitUsage, "unknown command"},
		{[]string{"analyze"}, exitUsage, "no input"},
		{[]string{"analyze", "--format", "pdf", "--file", "x"}, exitUsage, "unknown --format"},
		{[]string{"analyze", "--jaeger", "127.0.0.1:1"}, exitUsage, "--service is required"},
		{[]string{"analyze", "--file", "/nonexistent/spans.json"}, exitError, "no such file"},
		{[]string{"trace", "--file", "x"}, exitUsage, "TRACE_ID"},
		{[]string{"demo", "--scenario", "nope"}, exitUsage, "no built-in scenario"},
	} {
		_, errs, code := runCmd(t, tt.args...)
		if code != tt.code || !strings.Contains(errs, tt.msg) {
			t.Errorf("%v: code %d, stderr %q; want %d and %q", tt.args, code, errs, tt.code, tt.msg)
		}
	}
}

func TestDemoInMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a scenario")
	}
	dir := t.TempDir()
	out, errs, code := runCmd(t, "demo", "--scenario", "prefill-unchunked", "--requests", "6", "--time-scale", "2",
		"--format", "json", "--out", filepath.Join(dir, "r.json"), "--truth", filepath.Join(dir, "truth.jsonl"))
	if code != exitOK {
		t.Fatalf("demo: code %d\n%s\n%s", code, out, errs)
	}
	b, err := os.ReadFile(filepath.Join(dir, "r.json"))
	if err != nil {
		t.Fatal(err)
	}
	var rpt report.Report
	if err := json.Unmarshal(b, &rpt); err != nil || rpt.Schema != report.Schema {
		t.Fatalf("report: %v, schema %q", err, rpt.Schema)
	}
	if rpt.Summary.Requests != 6 || len(rpt.Requests) != 6 {
		t.Fatalf("%d requests in the report, want 6", rpt.Summary.Requests)
	}
	tb, err := os.ReadFile(filepath.Join(dir, "truth.jsonl"))
	if err != nil || bytes.Count(tb, []byte("\n")) != 6 {
		t.Fatalf("truth file: %v, %d lines", err, bytes.Count(tb, []byte("\n")))
	}
	if !strings.Contains(errs, "scenario \"prefill-unchunked\"") {
		t.Errorf("demo did not say what it runs: %s", errs)
	}
}

// TestDemoColdRequestsFromTheScenario: the demo counts as cold the
// requests the scenario's engines warm up on, unless --cold says
// otherwise.
func TestDemoColdRequestsFromTheScenario(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a scenario")
	}
	dir := t.TempDir()
	scen := filepath.Join(dir, "warm.json")
	if err := os.WriteFile(scen, []byte(`{"name": "warm", "description": "cold start", "instances": 1, "seed": 3,
  "engine": {"profile": "fast", "warmup": {"requests": 2, "slowdown": 0.4}},
  "load": {"rate": 20, "concurrency": 2, "requests": 6, "duration": "30s",
    "mix": [{"name": "qa", "weight": 1, "prompt_tokens": 12, "max_tokens": 20}]}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	warmth := func(args ...string) map[string]int {
		t.Helper()
		path := filepath.Join(dir, "r.json")
		out, errs, code := runCmd(t, append([]string{"demo", "--scenario", scen, "--format", "json", "--out", path}, args...)...)
		if code != exitOK {
			t.Fatalf("demo: code %d\n%s\n%s", code, out, errs)
		}
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		var rpt report.Report
		if err := json.Unmarshal(b, &rpt); err != nil {
			t.Fatal(err)
		}
		got := map[string]int{}
		for _, g := range rpt.Groups {
			if g.Dimension == "warmth" {
				got[g.Key] = g.Requests
			}
		}
		return got
	}
	if got := warmth(); got["cold"] != 2 || got["warm"] != 4 {
		t.Errorf("warmth groups %v, want the scenario's 2 cold and 4 warm", got)
	}
	if got := warmth("--cold", "100"); got["cold"] != 6 || got["warm"] != 0 {
		t.Errorf("with --cold 100: warmth groups %v, want all 6 cold", got)
	}
}
