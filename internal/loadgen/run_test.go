package loadgen_test

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"net"
	"net/http"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/tokentrace/tokentrace/internal/loadgen"
	"github.com/tokentrace/tokentrace/internal/loadgen/loadgentest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// config returns a config for srv with one streamed chat type per name.
func config(srv *loadgentest.Server, names ...string) loadgen.Config {
	cfg := loadgen.DefaultConfig()
	cfg.BaseURL = srv.URL
	cfg.Types = nil
	for _, n := range names {
		t := loadgen.NewRequestType(n, 1, 50, 20)
		t.Model = n
		cfg.Types = append(cfg.Types, t)
	}
	cfg.Rate = math.Inf(1)
	cfg.Requests = 1
	return cfg
}

func run(t *testing.T, cfg loadgen.Config) *loadgen.Result {
	t.Helper()
	res, err := loadgen.Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func near(got, want, tol time.Duration) bool { return got >= want && got <= want+tol }

// The server streams a role chunk, then 10 tokens 2 ms apart, then 5 more
// 20 ms apart, then usage and [DONE]; the client measures them. The
// structure is checked on every try; the timings, with generous
// tolerances, must hold on one of three tries (a starved machine delays
// reads by whole scheduling quanta).
func TestStreamTiming(t *testing.T) {
	const first = 30 * time.Millisecond
	gaps := append(loadgentest.Gaps(9, 2*time.Millisecond), loadgentest.Gaps(5, 20*time.Millisecond)...)
	for _, tc := range []struct {
		name        string
		usageTokens int // 0: as many as chunks
		wantTokens  int
	}{
		{"one token per chunk", 0, 15},
		{"usage says 30 tokens in 15 chunks", 30, 30},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := loadgentest.NewServer(func(loadgentest.Request) loadgentest.Script {
				return loadgentest.Script{FirstDelay: first, Gaps: gaps, UsageTokens: tc.usageTokens,
					TraceParent: "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"}
			})
			defer srv.Close()
			var problems []string
			for try := 1; try <= 3; try++ {
				problems = streamTimingTry(t, srv, tc.wantTokens, first)
				if len(problems) == 0 {
					return
				}
				t.Logf("try %d: %v", try, problems)
			}
			t.Errorf("timings off on every try; last: %v", problems)
		})
	}
}

func streamTimingTry(t *testing.T, srv *loadgentest.Server, wantTokens int, first time.Duration) (problems []string) {
	t.Helper()
	res := run(t, config(srv, "timing"))
	if len(res.Records) != 1 {
		t.Fatalf("%d records, want 1", len(res.Records))
	}
	r := res.Records[0]
	if !r.OK() || r.Status != 200 {
		t.Fatalf("record failed: %+v", r)
	}
	if len(r.TokenTimes) != 15 || r.OutputTokens != wantTokens || !r.UsageReported || r.PromptTokens != 50 {
		t.Fatalf("chunks %d, output tokens %d, usage %v, prompt tokens %d; want 15, %d, true, 50",
			len(r.TokenTimes), r.OutputTokens, r.UsageReported, r.PromptTokens, wantTokens)
	}
	if r.TraceID != "4bf92f3577b34da6a3ce929d0e0e4736" {
		t.Errorf("TraceID = %q", r.TraceID)
	}
	if r.TTFT != r.TokenTimes[0] || r.E2E < r.TokenTimes[14] {
		t.Errorf("TTFT %v, first token %v, last %v, E2E %v", r.TTFT, r.TokenTimes[0], r.TokenTimes[14], r.E2E)
	}
	span := r.TokenTimes[14] - r.TokenTimes[0]
	tpot, ok := r.TPOT()
	if want := span / time.Duration(wantTokens-1); !ok || tpot-want > 1 || want-tpot > 1 {
		t.Errorf("TPOT = %v, want (last−first)/%d = %v", tpot, wantTokens-1, want)
	}
	itl := r.ITL()
	if len(itl) != 14 {
		t.Fatalf("%d ITL gaps, want 14", len(itl))
	}
	s := res.Summary()
	if s.TTFT.Count != 1 || s.TPOT.Count != 1 || s.ITL.Count != 14 || s.E2E.Count != 1 ||
		s.TTFT.Max != r.TTFT || s.TPOT.Median != tpot || s.ITL.Max != slices.Max(itl) {
		t.Errorf("summary does not match the record: %+v", s)
	}

	// Timings. A chunk cannot come before it was sent, so the lower
	// bounds are tight; the upper bounds allow for -race on a busy machine.
	if !near(r.TTFT, first, 120*time.Millisecond) {
		problems = append(problems, fmt.Sprintf("TTFT %v, want %v", r.TTFT, first))
	}
	if !near(span, 118*time.Millisecond, 150*time.Millisecond) {
		problems = append(problems, fmt.Sprintf("first to last token %v, want 118ms", span))
	}
	wantTPOT := 118 * time.Millisecond / time.Duration(wantTokens-1)
	if !near(tpot, wantTPOT, 150*time.Millisecond/time.Duration(wantTokens-1)) {
		problems = append(problems, fmt.Sprintf("TPOT %v, want %v", tpot, wantTPOT))
	}
	// ITL: the 10 fast gaps stay fast, the 5 slow ones are about 20 ms.
	fast, slow := itl[:9], itl[9:]
	if d := slices.Max(fast); d > 15*time.Millisecond {
		problems = append(problems, fmt.Sprintf("fast gaps %v, want ~2ms", fast))
	}
	var slowSum time.Duration
	for _, g := range slow {
		slowSum += g
		if g < 10*time.Millisecond || g > 80*time.Millisecond {
			problems = append(problems, fmt.Sprintf("slow gaps %v, want ~20ms", slow))
			break
		}
	}
	if !near(slowSum, 95*time.Millisecond, 120*time.Millisecond) {
		problems = append(problems, fmt.Sprintf("slow gaps add up to %v, want ~100ms", slowSum))
	}
	return problems
}

// What the server receives: the endpoint, model, max_tokens, usage option,
// prompt size and headers.
func TestRequestContent(t *testing.T) {
	srv := loadgentest.NewServer(func(loadgentest.Request) loadgentest.Script {
		return loadgentest.Script{Gaps: loadgentest.Gaps(3, time.Millisecond)}
	})
	defer srv.Close()

	cfg := config(srv)
	chat := loadgen.NewRequestType("chat", 1, 800, 400)
	comp := loadgen.RequestType{Name: "comp", Weight: 1, PromptTokens: 50, MaxTokens: 7, Model: "m2",
		Stream: true, Endpoint: loadgen.EndpointCompletions}
	whole := loadgen.RequestType{Name: "whole", Weight: 1, PromptTokens: 10, Model: "m3"}
	cfg.Types = []loadgen.RequestType{chat, comp, whole}
	cfg.Requests = 30
	cfg.Headers = map[string]string{"Authorization": "Bearer secret"}
	cfg.BaseURL = srv.URL + "/v1/" // a base URL ending in /v1 works too
	res := run(t, cfg)

	byType := map[string][]loadgen.Record{}
	for _, r := range res.Records {
		if !r.OK() {
			t.Fatalf("record failed: %+v", r)
		}
		byType[r.Type] = append(byType[r.Type], r)
	}
	if len(byType["chat"]) == 0 || len(byType["comp"]) == 0 || len(byType["whole"]) == 0 {
		t.Fatalf("30 arrivals did not draw every type: %v", byType)
	}
	for _, r := range byType["comp"] {
		if len(r.TokenTimes) != 4 || r.OutputTokens != 4 {
			t.Errorf("completions record: %d chunks, %d tokens; want 4, 4", len(r.TokenTimes), r.OutputTokens)
		}
	}
	for _, r := range byType["whole"] {
		if r.Stream || r.TTFT != 0 || len(r.TokenTimes) != 0 || r.OutputTokens != 4 || r.E2E <= 0 || r.PromptTokens != 10 {
			t.Errorf("non-streamed record: %+v", r)
		}
	}
	s := res.Summary()
	if s.E2E.Count != 30 || s.TTFT.Count != len(byType["chat"])+len(byType["comp"]) {
		t.Errorf("non-streamed requests count in E2E only: %+v", s)
	}
	for _, q := range srv.Requests() {
		if q.Header.Get("Authorization") != "Bearer secret" {
			t.Errorf("header not sent: %v", q.Header)
		}
		switch q.Model {
		case loadgen.DefaultModel:
			if q.Path != "/v1/chat/completions" || q.MaxTokens != 400 || !q.Stream || !q.IncludeUsage || q.PromptChars != 3200 {
				t.Errorf("chat request: %+v", q)
			}
		case "m2":
			if q.Path != "/v1/completions" || q.MaxTokens != 7 || !q.IncludeUsage || q.PromptChars != 200 {
				t.Errorf("completions request: %+v", q)
			}
		case "m3":
			if q.Stream || q.IncludeUsage || q.MaxTokens != 0 {
				t.Errorf("non-streamed request: %+v", q)
			}
		default:
			t.Errorf("unexpected model %q", q.Model)
		}
	}

	// Without usage, the tokens are the content-bearing chunks.
	cfg.IncludeUsage = false
	cfg.Types = []loadgen.RequestType{chat}
	cfg.Requests = 2
	for _, r := range run(t, cfg).Records {
		if r.UsageReported || r.OutputTokens != 4 || r.PromptTokens != 0 || r.TraceID != "" {
			t.Errorf("record without usage: %+v", r)
		}
	}
}

func TestConcurrencyLimit(t *testing.T) {
	for _, tc := range []struct {
		name    string
		rate    float64
		arrival string
	}{
		{"closed loop", math.Inf(1), loadgen.ArrivalPoisson},
		{"poisson faster than served", 400, loadgen.ArrivalPoisson},
		{"fixed faster than served", 400, loadgen.ArrivalFixed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := loadgentest.NewServer(func(loadgentest.Request) loadgentest.Script {
				return loadgentest.Script{FirstDelay: 5 * time.Millisecond, Gaps: loadgentest.Gaps(3, 5*time.Millisecond)}
			})
			defer srv.Close()
			cfg := config(srv, "a", "b")
			cfg.Rate, cfg.Arrival = tc.rate, tc.arrival
			cfg.Concurrency = 3
			cfg.Requests = 24
			res := run(t, cfg)
			if got := srv.MaxInFlight(); got != 3 {
				t.Errorf("server saw %d in flight at most, want exactly the limit 3", got)
			}
			if len(res.Records) != 24 || len(srv.Requests()) != 24 {
				t.Errorf("%d records, %d requests served; want 24", len(res.Records), len(srv.Requests()))
			}
			s := res.Summary()
			if s.Successful != 24 || s.Waited == 0 || s.TotalWait <= 0 || s.MaxWait <= 0 || s.TotalWait < s.MaxWait {
				t.Errorf("arrivals must have waited for the limit: %+v", s)
			}
			// The client's own view agrees: no more than 3 intervals overlap.
			for _, a := range res.Records {
				overlap := 0
				for _, b := range res.Records {
					if !b.Start.After(a.Start) && b.Start.Add(b.E2E).After(a.Start) {
						overlap++
					}
				}
				if overlap > 3 {
					t.Errorf("request %d started with %d in flight", a.Index, overlap)
				}
			}
		})
	}
	// Unlimited: a burst of 12 is served at once, and nobody waits.
	srv := loadgentest.NewServer(func(loadgentest.Request) loadgentest.Script {
		return loadgentest.Script{FirstDelay: 600 * time.Millisecond}
	})
	defer srv.Close()
	cfg := config(srv, "a")
	cfg.Concurrency, cfg.Requests = 0, 12
	s := run(t, cfg).Summary()
	if srv.MaxInFlight() != 12 || s.Waited != 0 || s.TotalWait != 0 {
		t.Errorf("no limit: %d in flight, %d waited", srv.MaxInFlight(), s.Waited)
	}
}

func TestBounds(t *testing.T) {
	srv := loadgentest.NewServer(func(loadgentest.Request) loadgentest.Script {
		return loadgentest.Script{Gaps: loadgentest.Gaps(2, time.Millisecond)}
	})
	defer srv.Close()

	t.Run("count", func(t *testing.T) {
		cfg := config(srv, "a")
		cfg.Rate, cfg.Arrival, cfg.Requests, cfg.Duration = 200, loadgen.ArrivalFixed, 7, 0
		before := len(srv.Requests())
		res := run(t, cfg)
		if len(res.Records) != 7 || len(srv.Requests())-before != 7 || res.Stopped != loadgen.StopRequests {
			t.Errorf("%d records, %d served, stopped by %q; want 7, 7, requests",
				len(res.Records), len(srv.Requests())-before, res.Stopped)
		}
		for i, r := range res.Records {
			if r.Index != i || r.Scheduled != time.Duration(i)*5*time.Millisecond {
				t.Errorf("record %d: index %d scheduled %v", i, r.Index, r.Scheduled)
			}
		}
	})
	t.Run("duration", func(t *testing.T) {
		cfg := config(srv, "a")
		cfg.Rate, cfg.Arrival, cfg.Requests, cfg.Duration = 50, loadgen.ArrivalFixed, 0, 300*time.Millisecond
		start := time.Now()
		res := run(t, cfg)
		el := time.Since(start)
		// Arrivals at 0, 20, ..., 280 ms: 15, fewer on a starved machine
		// (an overdue arrival is not sent after the bound). Without the
		// bound the run would never end.
		if n := len(res.Records); n < 1 || n > 15 || res.Stopped != loadgen.StopDuration {
			t.Errorf("%d records, stopped by %q; want 1-15 (15 on an idle machine), duration", n, res.Stopped)
		}
		if el < 280*time.Millisecond || el > 10*time.Second {
			t.Errorf("run took %v, want about 300ms", el)
		}
		for _, r := range res.Records {
			if r.Start.Sub(res.Start) >= cfg.Duration {
				t.Errorf("arrival %d sent %v after the start, after the bound", r.Index, r.Start.Sub(res.Start))
			}
		}
		for _, r := range res.Records {
			if r.Scheduled >= cfg.Duration {
				t.Errorf("arrival %d due at %v, after the duration", r.Index, r.Scheduled)
			}
		}
	})
	t.Run("count first", func(t *testing.T) {
		cfg := config(srv, "a")
		cfg.Rate, cfg.Requests, cfg.Duration = 100, 5, 10*time.Second
		start := time.Now()
		res := run(t, cfg)
		if len(res.Records) != 5 || res.Stopped != loadgen.StopRequests || time.Since(start) > 8*time.Second {
			t.Errorf("%d records, stopped by %q after %v", len(res.Records), res.Stopped, time.Since(start))
		}
	})
	t.Run("duration first", func(t *testing.T) {
		cfg := config(srv, "a")
		cfg.Rate, cfg.Requests, cfg.Duration = 20, 1000, 200*time.Millisecond
		res := run(t, cfg)
		if len(res.Records) >= 1000 || res.Stopped != loadgen.StopDuration {
			t.Errorf("%d records, stopped by %q", len(res.Records), res.Stopped)
		}
	})
	t.Run("duration while waiting for the limit", func(t *testing.T) {
		slow := loadgentest.NewServer(func(loadgentest.Request) loadgentest.Script {
			return loadgentest.Script{FirstDelay: 400 * time.Millisecond}
		})
		defer slow.Close()
		cfg := config(slow, "a")
		cfg.Concurrency, cfg.Requests, cfg.Duration = 2, 0, 100*time.Millisecond
		res := run(t, cfg)
		// The 2 that got a place (fewer only if the machine starved the
		// run for 100 ms); none of those that found the limit full.
		if n := len(res.Records); n < 1 || n > 2 || res.Stopped != loadgen.StopDuration {
			t.Errorf("%d records, stopped by %q; want the 2 that got a place, duration", n, res.Stopped)
		}
		for _, r := range res.Records {
			if !r.OK() {
				t.Errorf("in-flight request did not run to its end: %+v", r)
			}
		}
	})
}

func TestErrors(t *testing.T) {
	srv := loadgentest.NewServer(func(q loadgentest.Request) loadgentest.Script {
		three := loadgentest.Gaps(3, time.Millisecond)
		switch q.Model {
		case "bad":
			return loadgentest.Script{Status: 400, ErrorMessage: "max_tokens is too large"}
		case "busy":
			return loadgentest.Script{Status: 503, ErrorMessage: "engine overloaded"}
		case "cut":
			return loadgentest.Script{Gaps: three, CutAfter: 3}
		case "abort":
			return loadgentest.Script{Gaps: three, CutAfter: 2, Abort: true}
		case "streamerr":
			return loadgentest.Script{Gaps: three, StreamError: "engine crashed"}
		}
		return loadgentest.Script{Gaps: three}
	})
	defer srv.Close()
	cfg := config(srv, "ok", "bad", "busy", "cut", "abort", "streamerr")
	cfg.Requests, cfg.Concurrency = 120, 8
	res := run(t, cfg)

	want := map[string]struct {
		status int
		err    string
		chunks int
	}{
		"ok":        {200, "", 4},
		"bad":       {400, "HTTP 400: max_tokens is too large", 0},
		"busy":      {503, "HTTP 503: engine overloaded", 0},
		"cut":       {200, "stream truncated without [DONE] after 3 content chunks", 3},
		"abort":     {200, "stream truncated without [DONE] after 2 content chunks: unexpected EOF", 2},
		"streamerr": {200, "stream error: engine crashed", 4},
	}
	failed := 0
	for _, r := range res.Records {
		w := want[r.Type]
		if r.Status != w.status || r.Err != w.err || len(r.TokenTimes) != w.chunks || r.Canceled {
			t.Errorf("%s: status %d, error %q, %d chunks; want %d, %q, %d",
				r.Type, r.Status, r.Err, len(r.TokenTimes), w.status, w.err, w.chunks)
		}
		if !r.OK() {
			failed++
		}
	}
	s := res.Summary()
	if s.Failed != failed || s.Successful != 120-failed || s.Failed == 0 || s.Canceled != 0 {
		t.Errorf("summary: %d failed, %d successful; records say %d failed", s.Failed, s.Successful, failed)
	}
	if wantRate := float64(failed) / 120; math.Abs(s.ErrorRate-wantRate) > 1e-12 {
		t.Errorf("ErrorRate = %v, want %v", s.ErrorRate, wantRate)
	}
	if len(s.Errors) != 5 {
		t.Errorf("Errors = %+v, want the 5 distinct messages", s.Errors)
	}
	var total int
	for _, e := range s.Errors {
		total += e.Count
	}
	if total != failed {
		t.Errorf("error counts add up to %d, want %d", total, failed)
	}
	for _, ts := range s.Types {
		if ts.Name == "ok" && ts.Failed != 0 || ts.Name != "ok" && ts.Successful != 0 {
			t.Errorf("type %s: %d ok, %d failed", ts.Name, ts.Successful, ts.Failed)
		}
	}
	var buf bytes.Buffer
	if err := s.WriteText(&buf); err != nil {
		t.Fatal(err)
	}
	for _, msg := range []string{"HTTP 400: max_tokens is too large", "HTTP 503: engine overloaded", "stream error: engine crashed"} {
		if !strings.Contains(buf.String(), msg) {
			t.Errorf("report does not name %q:\n%s", msg, buf.String())
		}
	}
}

func TestTransportError(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // nothing listens there now
	cfg := loadgen.DefaultConfig()
	cfg.BaseURL, cfg.Requests, cfg.Rate = "http://"+addr, 3, math.Inf(1)
	res := run(t, cfg)
	s := res.Summary()
	if s.Failed != 3 || s.Successful != 0 || len(s.Errors) != 1 || !strings.Contains(s.Errors[0].Message, "connection refused") {
		t.Errorf("summary: %+v", s)
	}
	if res.Records[0].Status != 0 {
		t.Errorf("status %d, want 0 (no response)", res.Records[0].Status)
	}
}

// Cancelling the context stops the arrivals and aborts the requests in
// flight at once; they count as canceled, not failed.
func TestCancelStopsPromptly(t *testing.T) {
	srv := loadgentest.NewServer(func(loadgentest.Request) loadgentest.Script {
		return loadgentest.Script{FirstDelay: 5 * time.Millisecond, Gaps: loadgentest.Gaps(200, 50*time.Millisecond)} // 10 s
	})
	defer srv.Close()
	cfg := config(srv, "slow")
	cfg.Rate, cfg.Requests, cfg.Concurrency = 100, 1000, 4
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(200*time.Millisecond, cancel)
	start := time.Now()
	res, err := loadgen.Run(ctx, cfg)
	el := time.Since(start)
	if err != nil {
		t.Fatal(err)
	}
	// Without the abort each request would take 10 s; an idle machine
	// returns within a few ms of the cancel.
	if el > 4*time.Second {
		t.Errorf("Run returned %v after start, %v after cancel", el, el-200*time.Millisecond)
	}
	t.Logf("Run returned %v after the cancel", el-200*time.Millisecond)
	s := res.Summary()
	if res.Stopped != loadgen.StopCanceled || s.Canceled != 4 || s.Failed != 0 || s.Successful != 0 || s.Requests != 4 {
		t.Errorf("stopped by %q; summary %+v", res.Stopped, s)
	}
	for _, r := range res.Records {
		if !r.Canceled || r.OK() || !strings.HasPrefix(r.Err, "canceled") {
			t.Errorf("record: canceled %v, error %q; want canceled", r.Canceled, r.Err)
		}
	}
	// The server sees the disconnects.
	deadline := time.Now().Add(5 * time.Second)
	for srv.InFlight() != 0 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	if n := srv.InFlight(); n != 0 {
		t.Errorf("%d requests still in flight on the server", n)
	}

	// A context cancelled before the run sends nothing.
	res, err = loadgen.Run(ctx, cfg)
	if err != nil || len(res.Records) != 0 || res.Stopped != loadgen.StopCanceled {
		t.Errorf("pre-cancelled: %v, %d records, %q", err, len(res.Records), res.Stopped)
	}
}

// Closing Stop ends the arrivals; the requests in flight finish.
func TestStopDrains(t *testing.T) {
	srv := loadgentest.NewServer(func(loadgentest.Request) loadgentest.Script {
		return loadgentest.Script{FirstDelay: 5 * time.Millisecond, Gaps: loadgentest.Gaps(10, 10*time.Millisecond)}
	})
	defer srv.Close()
	cfg := config(srv, "a")
	cfg.Rate, cfg.Requests = 50, 1000
	stop := make(chan struct{})
	cfg.Stop = stop
	time.AfterFunc(150*time.Millisecond, func() { close(stop) })
	res := run(t, cfg)
	s := res.Summary()
	if res.Stopped != loadgen.StopStopped || s.Requests == 0 || s.Requests > 20 || s.Successful != s.Requests {
		t.Errorf("stopped by %q; %d requests, %d successful", res.Stopped, s.Requests, s.Successful)
	}
}

func TestDeterministicRuns(t *testing.T) {
	srv := loadgentest.NewServer(func(loadgentest.Request) loadgentest.Script { return loadgentest.Script{} })
	defer srv.Close()
	cfg := config(srv)
	cfg.Types = loadgen.BuiltinTypes()
	cfg.Requests, cfg.Seed = 40, 11
	types := func() []string {
		var out []string
		for _, r := range run(t, cfg).Records {
			out = append(out, r.Type)
		}
		return out
	}
	a, b := types(), types()
	if !slices.Equal(a, b) {
		t.Errorf("same seed, different mixes:\n%v\n%v", a, b)
	}
	arr, _ := loadgen.Schedule(cfg, 40)
	for i, x := range arr {
		if cfg.Types[x.Type].Name != a[i] {
			t.Fatalf("arrival %d: Run sent %s, Schedule says %s", i, a[i], cfg.Types[x.Type].Name)
		}
	}
}

func TestInvalidConfig(t *testing.T) {
	ok := loadgen.DefaultConfig()
	for _, tc := range []struct {
		name string
		edit func(*loadgen.Config)
	}{
		{"unbounded", func(c *loadgen.Config) { c.Requests, c.Duration = 0, 0 }},
		{"negative bounds", func(c *loadgen.Config) { c.Requests, c.Duration = -1, -time.Second }},
		{"not a URL", func(c *loadgen.Config) { c.BaseURL = "127.0.0.1:8080" }},
		{"zero rate", func(c *loadgen.Config) { c.Rate = 0 }},
		{"NaN rate", func(c *loadgen.Config) { c.Rate = math.NaN() }},
		{"unknown arrival", func(c *loadgen.Config) { c.Arrival = "uniform" }},
		{"no types", func(c *loadgen.Config) { c.Types = nil }},
		{"weights add up to 0", func(c *loadgen.Config) { c.Types = []loadgen.RequestType{loadgen.NewRequestType("a", 0, 1, 1)} }},
		{"duplicate names", func(c *loadgen.Config) { c.Types = append(c.Types, c.Types[0]) }},
		{"unnamed type", func(c *loadgen.Config) { c.Types[0].Name = "" }},
		{"unknown endpoint", func(c *loadgen.Config) { c.Types[0].Endpoint = "embeddings" }},
		{"infinite rate, no limit, by time", func(c *loadgen.Config) {
			c.Rate, c.Concurrency, c.Requests, c.Duration = math.Inf(1), 0, 0, time.Second
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := ok
			cfg.Types = loadgen.BuiltinTypes()
			tc.edit(&cfg)
			if res, err := loadgen.Run(context.Background(), cfg); err == nil || res != nil {
				t.Errorf("Run accepted it: %v", err)
			}
		})
	}
}

// Progress goes to a terminal only: a buffer or a pipe gets nothing.
func TestProgressQuietWhenNotATerminal(t *testing.T) {
	srv := loadgentest.NewServer(func(loadgentest.Request) loadgentest.Script { return loadgentest.Script{} })
	defer srv.Close()
	var buf bytes.Buffer
	cfg := config(srv, "a")
	cfg.Requests = 5
	cfg.Progress = &buf
	run(t, cfg)
	if buf.Len() != 0 {
		t.Errorf("progress wrote %q to a buffer", buf.String())
	}
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	cfg.Progress = w
	run(t, cfg)
	w.Close()
	var got bytes.Buffer
	if _, err := got.ReadFrom(r); err != nil || got.Len() != 0 {
		t.Errorf("progress wrote %q to a pipe (%v)", got.String(), err)
	}
}

// Run's own client closes its connections; a caller's client is used as is.
func TestCallerClient(t *testing.T) {
	srv := loadgentest.NewServer(func(loadgentest.Request) loadgentest.Script { return loadgentest.Script{} })
	defer srv.Close()
	var seen int
	cfg := config(srv, "a")
	cfg.Requests = 3
	cfg.Client = &http.Client{Transport: roundTripFunc(func(r *http.Request) (*http.Response, error) {
		seen++
		return srv.Client().Transport.RoundTrip(r)
	})}
	cfg.Concurrency = 1
	if s := run(t, cfg).Summary(); s.Successful != 3 || seen != 3 {
		t.Errorf("%d successful, %d through the caller's client", s.Successful, seen)
	}
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }
