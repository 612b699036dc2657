//go:build unix

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/tokentrace/tokentrace/internal/accuracy"
	"github.com/tokentrace/tokentrace/internal/jaegertest"
)

// The load of TestExampleBinariesThroughJaeger: overlapping requests on
// the prefill-unchunked engine, so the whole prompt of each newcomer
// (800 tokens for analysis, 3,000 for intruder) is one long gap in every
// request decoding beside it.
const (
	binRequests = 24
	binRate     = "3"
	binSeed     = "7"
	binMix      = "qa=0.55,analysis=0.3,intruder=0.15"
)

// TestExampleBinariesThroughJaeger runs, as real processes, what README.md
// tells a user to run by hand — examples/engine, examples/gateway and
// examples/loadgen — against a real Jaeger, then analyses what Jaeger
// holds with the built tokentrace binary and scores it against the
// engine's ground truth.
func TestExampleBinariesThroughJaeger(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the examples and starts Jaeger")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	began := time.Now()
	step := func(what string) { t.Logf("%6.1fs %s", time.Since(began).Seconds(), what) }

	// 1. Jaeger.
	j, err := jaegertest.Start(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(j.Stop)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("jaeger log (tail):\n%s", tail(j.Log(), 4000))
		}
	})
	step("jaeger ready")

	// 2. The binaries, built once.
	dir := t.TempDir()
	binDir := filepath.Join(dir, "bin")
	root := repoRoot(t, ctx)
	build := exec.CommandContext(ctx, "go", "build", "-o", binDir+string(filepath.Separator),
		"./examples/engine", "./examples/gateway", "./examples/loadgen", "./cmd/tokentrace")
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	bin := func(name string) string { return filepath.Join(binDir, name) }
	step("binaries built")

	// 3. The engine and the gateway, on free loopback ports.
	truthFile := filepath.Join(dir, "truth.jsonl")
	engine := startProc(t, ctx, "engine", bin("engine"),
		"-addr", "127.0.0.1:0", "-scenario", "prefill-unchunked", "-truth", truthFile)
	engineAddr := engine.listening(t, ctx)
	waitHTTP(t, ctx, engine, "http://"+engineAddr+"/health")

	gateway := startProc(t, ctx, "gateway", bin("gateway"),
		"-listen", "127.0.0.1:0", "-upstream", "http://"+engineAddr, "-otlp", j.OTLPGRPC,
		"-metrics-listen", "127.0.0.1:0", "-shutdown-timeout", "20s")
	gatewayAddr := gateway.listening(t, ctx)
	waitTCP(t, ctx, gateway, gatewayAddr)
	step("engine " + engineAddr + " and gateway " + gatewayAddr + " ready")

	// 4. The load, through the gateway.
	summaryFile := filepath.Join(dir, "loadgen.json")
	lg := exec.CommandContext(ctx, bin("loadgen"), "-url", "http://"+gatewayAddr,
		"-n", fmt.Sprint(binRequests), "-rate", binRate, "-seed", binSeed, "-mix", binMix,
		"-progress=false", "-timeout", "90s", "-json", summaryFile)
	if out, err := lg.CombinedOutput(); err != nil {
		t.Fatalf("loadgen: %v\n%s", err, out)
	}
	var sum struct {
		Requests   int `json:"requests"`
		Successful int `json:"successful"`
		Types      []struct {
			Name       string `json:"name"`
			Successful int    `json:"successful"`
		} `json:"types"`
	}
	if b, err := os.ReadFile(summaryFile); err != nil {
		t.Fatal(err)
	} else if err := json.Unmarshal(b, &sum); err != nil {
		t.Fatalf("loadgen summary: %v\n%s", err, b)
	}
	if sum.Requests != binRequests || sum.Successful != binRequests {
		t.Fatalf("loadgen: %d sent, %d successful; want %d", sum.Requests, sum.Successful, binRequests)
	}
	sent := map[string]int{}
	for _, ty := range sum.Types {
		if ty.Successful > 0 {
			sent[ty.Name] = ty.Successful
		}
	}
	step(fmt.Sprintf("loadgen done: %v", sent))

	// 5. SIGTERM: the gateway flushes its spans, the engine completes the
	// ground truth.
	gateway.terminate(t, 30*time.Second)
	engine.terminate(t, 20*time.Second)
	step("gateway and engine stopped")
	truth := readTruth(t, truthFile)
	if b, err := os.ReadFile(truthFile); err != nil || bytes.Count(b, []byte("\n")) != binRequests || len(truth) != binRequests {
		t.Fatalf("truth: %v, %d lines, %d trace ids; want %d", err, bytes.Count(b, []byte("\n")), len(truth), binRequests)
	}
	if _, ok := truth[""]; ok {
		t.Fatalf("a ground-truth record has no trace id: the engine did not get the gateway's traceparent")
	}

	// 6. The analysis, from Jaeger, by the built binary; Jaeger may take a
	// moment to index the last spans.
	repFile := filepath.Join(dir, "report.json")
	var got int
	for attempt := 1; ; attempt++ {
		out, err := exec.CommandContext(ctx, bin("tokentrace"), "analyze", "--jaeger", j.QueryGRPC,
			"--service", "llm-gateway", "--since", "30m", "--format", "json", "--out", repFile).CombinedOutput()
		if err == nil {
			got = len(readReport(t, repFile).Requests)
			if got >= binRequests {
				break
			}
		}
		if attempt >= 30 || ctx.Err() != nil {
			t.Fatalf("tokentrace analyze: %v after %d attempts, %d of %d requests\n%s", err, attempt, got, binRequests, out)
		}
		time.Sleep(500 * time.Millisecond)
	}
	rep := readReport(t, repFile)
	step(fmt.Sprintf("analysed: %d requests, %d degraded, causes %v", rep.Summary.Requests, rep.Summary.DegradedRequests, rep.Summary.Causes))

	// 7. What the report says.
	if len(rep.Requests) != binRequests || rep.Summary.Requests != binRequests {
		t.Errorf("%d requests in the report (summary %d), want %d", len(rep.Requests), rep.Summary.Requests, binRequests)
	}
	for _, r := range rep.Requests {
		if _, ok := truth[r.TraceID]; !ok {
			t.Errorf("request %s is not in the ground truth", r.TraceID)
		}
		if r.Instance != engineAddr {
			t.Errorf("request %s: instance %q, want %q", r.TraceID, r.Instance, engineAddr)
		}
	}
	score := accuracy.Evaluate(truth, rep)
	var row strings.Builder
	accuracy.WriteRow(&row, "example binaries via Jaeger", score)
	t.Log(row.String())
	if score.TrueSegments == 0 || score.Recall() < 0.8 || score.CauseAccuracy() < 0.8 {
		t.Errorf("injected slow-downs not found: %d true segments, recall %.2f, cause accuracy %.2f",
			score.TrueSegments, score.Recall(), score.CauseAccuracy())
	}
	if rep.Summary.Causes["prefill"] == 0 {
		t.Errorf("no prefill segment found on the prefill-unchunked engine: causes %v", rep.Summary.Causes)
	}

	// The loadgen's X-Prompt-Type reached the gateway's classifier: the
	// report groups the requests by the loadgen's type names.
	groups := map[string]int{}
	for _, g := range rep.Groups {
		if g.Dimension == "prompt_type" {
			groups[g.Key] = g.Requests
		}
	}
	if len(sent) < 2 || fmt.Sprint(groups) != fmt.Sprint(sent) {
		t.Errorf("prompt_type groups %v, want the loadgen's types %v", groups, sent)
	}

	for _, p := range []*proc{engine, gateway} {
		if s := p.stderr.String(); strings.Contains(s, "panic") || strings.Contains(s, "goroutine ") {
			t.Errorf("%s log shows a panic:\n%s", p.name, s)
		}
	}
	if s := gateway.stderr.String(); strings.Contains(s, "OpenTelemetry error") || strings.Contains(s, "could not be sent") {
		t.Errorf("the gateway failed to export spans:\n%s", s)
	}
	step("checked")
}

// repoRoot is the module root, from go env GOMOD.
func repoRoot(t *testing.T, ctx context.Context) string {
	t.Helper()
	out, err := exec.CommandContext(ctx, "go", "env", "GOMOD").Output()
	mod := strings.TrimSpace(string(out))
	if err != nil || mod == "" || mod == os.DevNull {
		t.Fatalf("go env GOMOD: %v %q", err, mod)
	}
	return filepath.Dir(mod)
}

// proc is an example program running as a process.
type proc struct {
	name           string
	cmd            *exec.Cmd
	stdout, stderr *lockedBuffer
	done           chan struct{}
	err            error // after done
}

func startProc(t *testing.T, ctx context.Context, name, path string, args ...string) *proc {
	t.Helper()
	p := &proc{name: name, stdout: &lockedBuffer{}, stderr: &lockedBuffer{}, done: make(chan struct{})}
	p.cmd = exec.CommandContext(ctx, path, args...)
	p.cmd.Stdout, p.cmd.Stderr = p.stdout, p.stderr
	if err := p.cmd.Start(); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	go func() { p.err = p.cmd.Wait(); close(p.done) }()
	t.Cleanup(func() {
		select {
		case <-p.done:
		default:
			_ = p.cmd.Process.Kill()
			<-p.done
		}
		if t.Failed() {
			t.Logf("%s %s\nstdout:\n%s\nstderr:\n%s", name, strings.Join(args, " "), p.stdout, tail(p.stderr.String(), 8000))
		}
	})
	return p
}

func (p *proc) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// poll calls ok every 50 ms until it returns true, failing the test if
// the process exits or the limit passes first.
func (p *proc) poll(t *testing.T, ctx context.Context, what string, limit time.Duration, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for !ok() {
		if p.exited() {
			t.Fatalf("%s exited (%v) before %s\n%s", p.name, p.err, what, p.stderr)
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			t.Fatalf("%s: not %s after %v\n%s", p.name, what, limit, p.stderr)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// listening returns the address of the "listening on ADDR" line the
// example programs print first on stdout.
func (p *proc) listening(t *testing.T, ctx context.Context) string {
	t.Helper()
	var addr string
	p.poll(t, ctx, "listening", 30*time.Second, func() bool {
		line, _, ok := strings.Cut(p.stdout.String(), "\n")
		if ok {
			addr, ok = strings.CutPrefix(line, "listening on ")
		}
		return ok
	})
	return addr
}

func waitHTTP(t *testing.T, ctx context.Context, p *proc, url string) {
	t.Helper()
	p.poll(t, ctx, "healthy", 30*time.Second, func() bool {
		resp, err := http.Get(url)
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})
}

func waitTCP(t *testing.T, ctx context.Context, p *proc, addr string) {
	t.Helper()
	p.poll(t, ctx, "accepting", 30*time.Second, func() bool {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err != nil {
			return false
		}
		c.Close()
		return true
	})
}

// terminate sends SIGTERM and requires a clean exit within limit.
func (p *proc) terminate(t *testing.T, limit time.Duration) {
	t.Helper()
	start := time.Now()
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatalf("%s: SIGTERM: %v", p.name, err)
	}
	select {
	case <-p.done:
	case <-time.After(limit):
		t.Fatalf("%s still running %v after SIGTERM\n%s", p.name, limit, p.stderr)
	}
	if p.err != nil {
		t.Fatalf("%s exited after SIGTERM: %v\n%s", p.name, p.err, p.stderr)
	}
	t.Logf("%s exited %v after SIGTERM", p.name, time.Since(start).Round(time.Millisecond))
}

// lockedBuffer is a bytes.Buffer safe for a process's output copier and
// the test at once.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return "…" + s[len(s)-n:]
}
