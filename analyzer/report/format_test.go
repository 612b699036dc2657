package report

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

var gen = time.Date(2025, 6, 1, 12, 30, 0, 0, time.UTC)

// basicReport is a small hand-built report: three requests (one with its
// gap series, one without, one clean and failed), segments of every
// cause, skipped inputs, warnings and a warn check.
func basicReport() *Report {
	start := gen.Add(-10 * time.Minute)
	// Request 1: tokens 0..150; 1–10 at ~15 ms, 11–50 at 22, 51–100 at 85
	// (prefill), 101–130 at 40 (batch), 131–150 at 22.
	var gaps []float64
	var toks []int
	for tok := 1; tok <= 150; tok++ {
		g := 22.0
		switch {
		case tok <= 10:
			g = 15 + float64(tok%3)*0.5
		case tok >= 51 && tok <= 100:
			g = 85 + float64(tok%5)
		case tok >= 101 && tok <= 130:
			g = 40
		}
		gaps = append(gaps, g)
		toks = append(toks, tok)
	}
	const other = "9be1d0a47c3e4f5a8b6c7d8e9f0a1b2c"
	return &Report{
		Schema:    Schema,
		Generated: gen,
		Source:    "jaeger localhost:16685 (service llm-gateway, last 15m)",
		Summary: Summary{
			Requests: 3, Tokens: 352, DegradedRequests: 2, Segments: 5,
			TTFT:   Dist{Count: 3, Mean: 383.3, P50: 350, P90: 470, P99: 497, P999: 499.7, P9999: 499.97, Max: 500},
			TPOT:   Dist{Count: 3, Mean: 35.2, P50: 31.5, P90: 44.1, P99: 48.3, P999: 48.7, P9999: 48.74, Max: 48.75},
			ITL:    Dist{Count: 349, Mean: 38.4, P50: 22, P90: 87, P99: 180, P999: 801.2, P9999: 845.1, Max: 850},
			Causes: map[string]int{CausePrefill: 1, CauseBatch: 1, CauseGC: 1, CauseKVSwap: 1, CauseUnknown: 1},
			Histograms: []Histogram{
				{Name: "tpot_ms", Bounds: []float64{20, 30, 50}, Counts: []int{0, 1, 2, 0}},
				{Name: "itl_ms", Bounds: []float64{10, 15, 20, 30, 50, 70, 100, 150, 200, 300, 500, 700, 1000}, Counts: []int{0, 4, 6, 190, 30, 41, 75, 0, 1, 0, 0, 0, 1, 0}},
			},
		},
		Groups: []Group{
			{Dimension: "instance", Key: "gpu-0:8000", Requests: 2, Errors: 1, Degraded: 1,
				TTFT: Dist{Count: 2, P50: 425}, TPOT: Dist{Count: 2, P50: 40.1, P99: 48.7}, ITL: Dist{Count: 150, P99: 89, P999: 89.9}},
			{Dimension: "instance", Key: "gpu-1:8000", Requests: 1, Degraded: 1,
				TTFT: Dist{Count: 1, P50: 300}, TPOT: Dist{Count: 1, P50: 25, P99: 25}, ITL: Dist{Count: 199, P99: 180, P999: 801.2}},
			{Dimension: "prompt_type", Key: "", Requests: 3, Errors: 1, Degraded: 2,
				TTFT: Dist{Count: 3, P50: 350}, TPOT: Dist{Count: 3, P50: 31.5, P99: 48.3}, ITL: Dist{Count: 349, P99: 180, P999: 801.2}},
		},
		Checks: []Check{
			{Name: "error_rate", Status: "warn", Detail: "33 % of 3 requests failed or were cut short (1 truncated) while P99 TPOT 48.3ms looks normal (≤ 100ms): failed streams add few or no TPOT samples"},
			{Name: "instance_imbalance", Status: "ok", Detail: "1 of 2 instances have ≥ 10 TPOT samples: nothing to compare"},
			{Name: "sawtooth_itl", Status: "ok", Detail: "no instance has 4 stall events in a row to test"},
		},
		Requests: []Request{
			{
				TraceID: "c3d4e5f60718293a4b5c6d7e8f901a2b", SpanID: "00f067aa0ba902b7", Service: "llm-gateway",
				Instance: "gpu-0:8000", Model: "llama-3-8b", Start: start.Add(time.Second), Tokens: 1,
				TTFTMs: 500, Outcome: "truncated", Error: true, TimesFrom: "events",
			},
			{
				TraceID: "4f2a9c1e5b7d3f8a0c2e4b6d8f0a1c3e", SpanID: "b7ad6b7169203331", Service: "llm-gateway",
				Instance: "gpu-0:8000", Model: "llama-3-8b", PromptType: "chat", ModelVersion: "2025-05",
				Ordinal: 412, Start: start, Tokens: 151, TTFTMs: 350, TPOTMs: 48.75, Outcome: "complete", TimesFrom: "events",
				Segments: []Segment{
					{StartToken: 51, EndToken: 100, Kind: "run", Start: start.Add(1500 * time.Millisecond), End: start.Add(5800 * time.Millisecond),
						BaselineMs: 22, MedianMs: 86, Slowdown: 3.909, LostMs: 3200, Cause: CausePrefill, Confidence: 0.85,
						Evidence: []Evidence{
							{Kind: "cross_trace_prefill", TraceID: other, OverlapMs: 1200, PromptTokens: 3100, Detail: "prefill 9be1d0a4 (3100 prompt tokens)"},
							{Kind: "prefill_event", TraceID: other, OverlapMs: 900},
						}},
					{StartToken: 101, EndToken: 130, Kind: "run", Start: start.Add(5800 * time.Millisecond), End: start.Add(7 * time.Second),
						BaselineMs: 22, MedianMs: 40, Slowdown: 1.818, LostMs: 540, Cause: CauseBatch, Confidence: 0.6,
						Detail:   "long-context request 9be1d0a4 (3100 prompt tokens) decoding in the same batch",
						Evidence: []Evidence{{Kind: "cross_trace_batch", TraceID: other, OverlapMs: 1200, PromptTokens: 3100}}},
				},
				GapsMs: gaps, GapTokens: toks,
			},
			{
				TraceID: "a1b2c3d4e5f60718293a4b5c6d7e8f90", SpanID: "53995c3f42cd8ad8", Service: "llm-gateway",
				Instance: "gpu-1:8000", Model: "llama-3-8b", Start: start.Add(2 * time.Second), Tokens: 200,
				TTFTMs: 300, TPOTMs: 25.01, Outcome: "complete", TimesFrom: "compact",
				Segments: []Segment{
					{StartToken: 40, EndToken: 40, Kind: "stall", BaselineMs: 20, MedianMs: 180, Slowdown: 9, LostMs: 160,
						Cause: CauseGC, Confidence: 0.9, Detail: "GC pause (engine) of 180 ms",
						Evidence: []Evidence{{Kind: "gc_event", OverlapMs: 175, Detail: "engine GC pause of 180 ms"}}},
					{StartToken: 90, EndToken: 90, Kind: "stall", BaselineMs: 20, MedianMs: 850, Slowdown: 42.5, LostMs: 830,
						Cause: CauseKVSwap, Confidence: 0.7, Detail: "preempted (recompute) for 840 ms",
						Evidence: []Evidence{{Kind: "preemption_event", OverlapMs: 840, Detail: "recompute preemption, 840 ms, victim=true"}}},
					{StartToken: 120, EndToken: 160, Kind: "run", BaselineMs: 20, MedianMs: 45, Slowdown: 2.25, LostMs: 1025,
						Cause: CauseUnknown, Evidence: []Evidence{}},
				},
				Warnings: []string{"token times rebuilt from the compact encoding: 128 of 200 token events kept"},
			},
		},
		Skipped: []Skip{
			{Reason: "not a tokentrace span", Count: 5, Example: "0af7651916cd43dd8448eb211c80319c"},
			{Reason: "span ends before it starts", Count: 1, Example: "traces.json:17"},
		},
		Warnings:    []string{"2 spans had their token events capped; times from the compact encoding"},
		Sensitivity: 1,
	}
}

func emptyReport() *Report {
	return &Report{Generated: gen, Source: "spans.json"}
}

var goldenOpts = Options{JaegerUI: "http://localhost:16686/"}

func TestGolden(t *testing.T) {
	cases := map[string]*Report{"basic": basicReport(), "empty": emptyReport()}
	for name, rpt := range cases {
		for _, format := range []string{"text", "md", "json"} {
			t.Run(name+"."+format, func(t *testing.T) {
				var b bytes.Buffer
				if err := Write(&b, rpt, format, goldenOpts); err != nil {
					t.Fatal(err)
				}
				path := filepath.Join("testdata", name+"."+format)
				if *update {
					if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
						t.Fatal(err)
					}
					return
				}
				want, err := os.ReadFile(path)
				if err != nil {
					t.Fatalf("%v (run go test ./analyzer/report -update)", err)
				}
				if got := b.String(); got != string(want) {
					t.Errorf("%s differs from %s (run with -update to accept):\n%s", format, path, diff(string(want), got))
				}
			})
		}
	}
}

// diff shows the first differing line.
func diff(want, got string) string {
	w, g := strings.Split(want, "\n"), strings.Split(got, "\n")
	for i := range max(len(w), len(g)) {
		var a, b string
		if i < len(w) {
			a = w[i]
		}
		if i < len(g) {
			b = g[i]
		}
		if a != b {
			return fmt.Sprintf("line %d\nwant %q\n got %q", i+1, a, b)
		}
	}
	return ""
}

func TestWriteErrors(t *testing.T) {
	var b bytes.Buffer
	if err := Write(&b, basicReport(), "yaml", Options{}); err == nil || !strings.Contains(err.Error(), "text, json, md, html") {
		t.Errorf("unknown format: %v", err)
	}
	if err := Write(&b, nil, "text", Options{}); err == nil {
		t.Error("nil report: no error")
	}
	if err := Write(failWriter{}, basicReport(), "text", Options{}); err == nil {
		t.Error("text: write error lost")
	}
	for _, f := range Formats() {
		if err := Write(failWriter{}, basicReport(), f, Options{}); err == nil {
			t.Errorf("%s: write error lost", f)
		}
	}
}

type failWriter struct{}

func (failWriter) Write([]byte) (int, error) { return 0, fmt.Errorf("disk full") }

func TestWriteLeavesReportAlone(t *testing.T) {
	rpt := basicReport()
	rpt.Requests[1].Segments[0].Evidence = nil
	before, _ := json.Marshal(rpt)
	for _, f := range Formats() {
		if err := Write(&bytes.Buffer{}, rpt, f, Options{JaegerUI: "http://j"}); err != nil {
			t.Fatal(err)
		}
	}
	if after, _ := json.Marshal(rpt); !bytes.Equal(before, after) {
		t.Error("Write modified the report")
	}
}

func TestJSON(t *testing.T) {
	var b bytes.Buffer
	if err := Write(&b, basicReport(), "json", Options{MaxRequests: 1, JaegerUI: "http://j:16686"}); err != nil {
		t.Fatal(err)
	}
	var back Report
	if err := json.Unmarshal(b.Bytes(), &back); err != nil {
		t.Fatal(err)
	}
	if len(back.Requests) != 3 {
		t.Errorf("JSON holds %d requests, want all 3 whatever MaxRequests", len(back.Requests))
	}
	if got := back.Requests[0].URL; got != "http://j:16686/trace/c3d4e5f60718293a4b5c6d7e8f901a2b" {
		t.Errorf("URL %q", got)
	}
	want := prepare(basicReport(), Options{JaegerUI: "http://j:16686"})
	if !reflect.DeepEqual(&back, want) {
		t.Error("JSON does not round-trip")
	}
	// gaps_ms only where present; empty lists are [] not null.
	s := b.String()
	if n := strings.Count(s, `"gaps_ms"`); n != 1 {
		t.Errorf("gaps_ms %d times, want once", n)
	}
	b.Reset()
	Write(&b, emptyReport(), "json", Options{})
	if !strings.Contains(b.String(), `"requests": []`) || !strings.Contains(b.String(), `"schema": "tokentrace.report/v1"`) {
		t.Errorf("empty report JSON:\n%s", b.String())
	}
	// Field order is struct order.
	if i, j := strings.Index(s, `"schema"`), strings.Index(s, `"summary"`); i < 0 || j < i {
		t.Error("schema is not first")
	}
}

func TestMaxRequests(t *testing.T) {
	for _, tt := range []struct {
		max  int
		want int
	}{{0, 2}, {1, 1}, {-1, 2}} {
		got := worst(basicReport(), Options{MaxRequests: tt.max})
		if len(got) != tt.want {
			t.Errorf("MaxRequests %d: %d shown, want %d", tt.max, len(got), tt.want)
		}
		// Worst first: 3,740 ms lost before 2,015 ms.
		if got[0].TraceID != "4f2a9c1e5b7d3f8a0c2e4b6d8f0a1c3e" {
			t.Errorf("worst first: %s", got[0].TraceID)
		}
	}
	// The caller asks for depth with GapsMs: a clean request with gaps shows.
	rpt := basicReport()
	rpt.Requests[0].GapsMs = []float64{20}
	if got := worst(rpt, Options{}); len(got) != 3 || got[2].TraceID != rpt.Requests[0].TraceID {
		t.Errorf("clean request with gaps not shown: %d", len(got))
	}
}

func TestTimeline(t *testing.T) {
	rpt := basicReport()
	var got []string
	for _, row := range timeline(&rpt.Requests[1]) {
		s := fmt.Sprintf("%d-%d %s", row.From, row.To, pace(row))
		if row.Seg != nil {
			s += " " + row.Seg.Cause
		}
		got = append(got, s)
	}
	want := []string{"1-50 22", "51-100 86 prefill", "101-130 40 batch", "131-150 22"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("measured timeline %q, want %q", got, want)
	}
	got = got[:0]
	for _, row := range timeline(&rpt.Requests[2]) {
		got = append(got, fmt.Sprintf("%s %s", tokenRange(row.From, row.To, "-"), pace(row)))
	}
	want = []string{"1-39 ≈20", "40 180", "41-89 ≈20", "90 850", "91-119 ≈20", "120-160 45", "161-199 ≈20"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("approximate timeline %q, want %q", got, want)
	}
	// Overlapping and out-of-range segments.
	r := &Request{Tokens: 10, TPOTMs: 5, Segments: []Segment{{StartToken: 6, EndToken: 12, MedianMs: 9}, {StartToken: 0, EndToken: 3, MedianMs: 7}, {StartToken: 2, EndToken: 4, MedianMs: 8}}}
	got = got[:0]
	for _, row := range timeline(r) {
		got = append(got, fmt.Sprintf("%s %s", tokenRange(row.From, row.To, "-"), pace(row)))
	}
	want = []string{"1-3 7.0", "4 8.0", "5 ≈5.0", "6-12 9.0"} // no baselines: the TPOT
	if !reflect.DeepEqual(got, want) {
		t.Errorf("odd segments %q, want %q", got, want)
	}
	if rows := timeline(&Request{Tokens: 1}); rows != nil {
		t.Errorf("one token: %v", rows)
	}
}

func TestFormatters(t *testing.T) {
	for _, tt := range []struct {
		ms   float64
		want string
	}{
		{0, "0"}, {0.000850, "850ns"}, {0.0123, "12.3µs"}, {0.85, "850µs"}, {1.5, "1.50ms"}, {15.234, "15.2ms"},
		{152.4, "152ms"}, {999.6, "1.00s"}, {1523, "1.52s"}, {65000, "65.0s"}, {152000, "152s"}, {-15.2, "-15.2ms"},
	} {
		if got := FormatMs(tt.ms); got != tt.want {
			t.Errorf("FormatMs(%g) = %q, want %q", tt.ms, got, tt.want)
		}
	}
	for _, tt := range []struct {
		ms   float64
		want string
	}{{0.35, "0.35 ms"}, {4.24, "4.2 ms"}, {85, "85 ms"}, {1200, "1.2 s"}, {3740, "3.7 s"}, {125000, "125 s"}} {
		if got := humanMs(tt.ms); got != tt.want {
			t.Errorf("humanMs(%g) = %q, want %q", tt.ms, got, tt.want)
		}
	}
	for n, want := range map[int]string{0: "0", 999: "999", 1000: "1,000", 1234567: "1,234,567", -4200: "-4,200"} {
		if got := FormatCount(n); got != want {
			t.Errorf("FormatCount(%d) = %q, want %q", n, got, want)
		}
	}
	for f, want := range map[float64]string{0: "0 %", 0.0005: "0.05 %", 0.031: "3.1 %", 0.5: "50 %", 1: "100 %"} {
		if got := FormatPercent(f); got != want {
			t.Errorf("FormatPercent(%g) = %q, want %q", f, got, want)
		}
	}
	if got := ShortID("4f2a9c1e5b7d3f8a"); got != "4f2a9c1e…" {
		t.Errorf("ShortID = %q", got)
	}
}

func TestSentence(t *testing.T) {
	rpt := basicReport()
	r := &rpt.Requests[1]
	got := sentence(r, &r.Segments[0], ident)
	want := "Tokens 51–100 came at 86 ms/token, 3.9× the request's 22 ms baseline, while request 9be1d0a4… (3,100 prompt tokens) " +
		"was being prefilled on the same instance gpu-0:8000 (overlap 1.2 s, confidence 0.85). That cost 3.2 s."
	if got != want {
		t.Errorf("sentence\n got %q\nwant %q", got, want)
	}
	r = &rpt.Requests[2]
	if got := sentence(r, &r.Segments[2], ident); !strings.Contains(got, "no cause was found") {
		t.Errorf("unknown: %q", got)
	}
	if got := sentence(r, &r.Segments[0], ident); !strings.HasPrefix(got, "Token 40 came after a 180 ms gap, 9.0×") {
		t.Errorf("stall: %q", got)
	}
}

func TestTextColor(t *testing.T) {
	var plainOut, colored bytes.Buffer
	Write(&plainOut, basicReport(), "text", Options{})
	Write(&colored, basicReport(), "text", Options{Color: true})
	if strings.Contains(plainOut.String(), "\x1b[") {
		t.Error("colour without Options.Color")
	}
	if !strings.Contains(colored.String(), ansiYellow+"! warn") || !strings.Contains(colored.String(), ansiRed) {
		t.Error("no colour for warn checks or degraded rows")
	}
}

func TestRequestsOnlyAndStatsOnly(t *testing.T) {
	render := func(format string, opts Options, rpt *Report) string {
		t.Helper()
		var b bytes.Buffer
		if err := Write(&b, rpt, format, opts); err != nil {
			t.Fatal(err)
		}
		return b.String()
	}
	// tokentrace trace: one clean request without gaps is still shown.
	one := basicReport()
	one.Requests = one.Requests[:1]
	for _, tt := range []struct{ format, runWide, clean string }{
		{"text", "checks", "no degraded segment"},
		{"md", "## Checks", "No degraded segment."},
		{"html", `id="checks"`, "No degraded segment."},
	} {
		out := render(tt.format, Options{RequestsOnly: true}, one)
		if strings.Contains(out, tt.runWide) || !strings.Contains(out, one.Requests[0].TraceID) || !strings.Contains(out, tt.clean) {
			t.Errorf("%s RequestsOnly:\n%s", tt.format, out)
		}
		if tt.format == "html" {
			wellFormed(t, "the requests-only page", out)
		}
		out = render(tt.format, Options{StatsOnly: true}, basicReport())
		if !strings.Contains(out, tt.runWide) || strings.Contains(out, "4f2a9c1e5b7d3f8a0c2e4b6d8f0a1c3e") {
			t.Errorf("%s StatsOnly shows requests or no checks:\n%s", tt.format, out)
		}
		if tt.format == "html" {
			wellFormed(t, "the stats-only page", out)
		}
	}
}
