package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/tokentrace/tokentrace/analyzer/report"
	"github.com/tokentrace/tokentrace/internal/accuracy"
	"github.com/tokentrace/tokentrace/internal/jaegertest"
	"github.com/tokentrace/tokentrace/internal/sim"
)

func readReport(t *testing.T, path string) *report.Report {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var r report.Report
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return &r
}

func readTruth(t *testing.T, path string) accuracy.Truth {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	truth := accuracy.Truth{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var r sim.TruthRecord
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatal(err)
		}
		segs := []accuracy.Segment{}
		for _, s := range r.Segments {
			segs = append(segs, accuracy.Segment{Start: s.StartToken, End: s.EndToken, Cause: s.Cause})
		}
		truth[r.TraceID] = segs
	}
	return truth
}

// signature is a report's requests and segments, comparable across
// protocols.
func signature(r *report.Report) []string {
	var out []string
	for _, q := range r.Requests {
		s := fmt.Sprintf("%s tokens=%d times=%s", q.TraceID, q.Tokens, q.TimesFrom)
		for _, g := range q.Segments {
			s += fmt.Sprintf(" [%d-%d %s]", g.StartToken, g.EndToken, g.Cause)
		}
		out = append(out, s)
	}
	sort.Strings(out)
	return out
}

// longScenario has two 2,000-token requests and long-prompt intruders, on
// the fast profile so it runs in seconds.
const longScenario = `{
  "name": "long-e2e", "description": "2,000-token streams with prefill intruders",
  "instances": 1, "seed": 5,
  "engine": {"profile": "13b", "prefill": {"chunked": false}},
  "load": {"rate": 4, "arrival": "fixed", "concurrency": 8, "requests": 6, "duration": "60s",
    "mix": [{"name": "long", "weight": 0.5, "prompt_tokens": 16, "max_tokens": 2000},
            {"name": "intruder", "weight": 0.5, "prompt_tokens": 3000, "max_tokens": 20}]}
}`

// TestEndToEndThroughJaeger runs the simulated engine, the instrumented
// gateway and the load generator with known injected slow-downs, exports
// to a real Jaeger, pulls the spans back through every query protocol and
// checks what the report finds.
func TestEndToEndThroughJaeger(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Jaeger")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	j, err := jaegertest.Start(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer j.Stop()
	dir := t.TempDir()

	// 1. The demo exports to Jaeger and analyses what it pulls back.
	scen := filepath.Join(dir, "long.json")
	if err := os.WriteFile(scen, []byte(longScenario), 0o644); err != nil {
		t.Fatal(err)
	}
	rep := filepath.Join(dir, "demo.json")
	truthFile := filepath.Join(dir, "truth.jsonl")
	out, errs, code := runCmd(t, "demo", "--scenario", scen, "--truth", truthFile, "--format", "json", "--out", rep,
		"--jaeger-otlp", j.OTLPGRPC, "--jaeger", j.QueryGRPC)
	if code != exitOK {
		t.Fatalf("demo via Jaeger: code %d\n%s\n%s\njaeger:\n%s", code, out, errs, j.Log())
	}
	demo := readReport(t, rep)
	truth := readTruth(t, truthFile)
	if len(demo.Requests) != 6 || len(truth) != 6 {
		t.Fatalf("%d requests read back, %d in truth; want 6", len(demo.Requests), len(truth))
	}
	// No token time lost: the 2,000-token spans exceed the 128 default and
	// come back whole (events up to the limit, the rest from the compact
	// encoding).
	long := 0
	for _, r := range demo.Requests {
		if r.Tokens == 2000 {
			long++
			if r.TimesFrom != "events" && r.TimesFrom != "compact" {
				t.Errorf("%s: times from %q", r.TraceID, r.TimesFrom)
			}
		}
	}
	if long < 2 {
		t.Errorf("%d requests with 2,000 tokens, want ≥ 2", long)
	}
	score := accuracy.Evaluate(truth, demo)
	var row strings.Builder
	accuracy.WriteRow(&row, "e2e via Jaeger", score)
	t.Log(row.String())
	if score.TrueSegments == 0 || score.Recall() < 0.8 || score.CauseAccuracy() < 0.8 {
		t.Errorf("injected slow-downs not found: recall %.2f, cause accuracy %.2f", score.Recall(), score.CauseAccuracy())
	}

	// 2. Every protocol gives the same report.
	var want []string
	for _, p := range []struct{ name, endpoint, proto string }{
		{"grpc-v3", j.QueryGRPC, "v3"},
		{"grpc-v2", j.QueryGRPC, "v2"},
		{"http-v3", "http://" + j.QueryHTTP, "http-v3"},
		{"http-legacy", "http://" + j.QueryHTTP, "http-legacy"},
	} {
		path := filepath.Join(dir, p.name+".json")
		out, errs, code := runCmd(t, "analyze", "--jaeger", p.endpoint, "--jaeger-protocol", p.proto,
			"--service", "tokentrace-demo", "--since", "30m", "--format", "json", "--out", path)
		if code != exitOK {
			t.Fatalf("%s: code %d\n%s\n%s", p.name, code, out, errs)
		}
		got := signature(readReport(t, path))
		if want == nil {
			want = got
			if len(want) != 6 {
				t.Fatalf("%s: %d requests", p.name, len(want))
			}
			continue
		}
		if strings.Join(got, "\n") != strings.Join(want, "\n") {
			t.Errorf("%s disagrees with grpc-v3:\n%s\nvs\n%s", p.name, strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
	}

	// 3. The UI's "Download JSON" analysed from a file agrees too.
	resp, err := http.Get(fmt.Sprintf("http://%s/api/traces?service=tokentrace-demo&limit=100&start=%d&end=%d",
		j.QueryHTTP, time.Now().Add(-30*time.Minute).UnixMicro(), time.Now().UnixMicro()))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	file := filepath.Join(dir, "download.json")
	if err := os.WriteFile(file, b, 0o644); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "file.json")
	if out, errs, code := runCmd(t, "analyze", "--file", file, "--format", "json", "--out", path); code != exitOK {
		t.Fatalf("analyze --file: %d\n%s\n%s", code, out, errs)
	}
	if got := signature(readReport(t, path)); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("file download disagrees:\n%s\nvs\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}

	// 4. One request in depth, from Jaeger, with a link to the UI.
	var worst report.Request
	for _, r := range demo.Requests {
		if len(r.Segments) > len(worst.Segments) {
			worst = r
		}
	}
	out, errs, code = runCmd(t, "trace", worst.TraceID, "--jaeger", j.QueryGRPC, "--jaeger-ui", "http://localhost:16686")
	if code != exitOK || !strings.Contains(out, worst.TraceID) || !strings.Contains(out, "http://localhost:16686/trace/"+worst.TraceID) {
		t.Fatalf("trace: code %d\n%s\n%s", code, out, errs)
	}
	// A gate: the run is degraded.
	if _, _, code := runCmd(t, "stats", "--jaeger", j.QueryGRPC, "--service", "tokentrace-demo", "--fail-on-degraded"); code != exitGate {
		t.Errorf("--fail-on-degraded: exit %d, want %d", code, exitGate)
	}

	// 5. Jaeger stopped: a clear error, nothing half-written.
	j.Stop()
	path = filepath.Join(dir, "after-stop.json")
	_, errs, code = runCmd(t, "analyze", "--jaeger", j.QueryGRPC, "--service", "tokentrace-demo", "--timeout", "3s", "--out", path)
	if code != exitError || !strings.Contains(errs, "unreachable") || !strings.Contains(errs, j.QueryGRPC) {
		t.Errorf("Jaeger down: code %d, stderr %q", code, errs)
	}
	if _, err := os.Stat(path); err == nil {
		t.Errorf("a report was written although Jaeger was down")
	}
}
