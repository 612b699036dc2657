package loadgen

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden")

func TestWriteTextGolden(t *testing.T) {
	var buf bytes.Buffer
	if err := sampleResult().Summary().WriteText(&buf); err != nil {
		t.Fatal(err)
	}
	golden := filepath.Join("testdata", "summary.golden")
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(golden, buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if got := buf.String(); got != string(want) {
		t.Errorf("WriteText:\n%s\nwant (%s):\n%s", got, golden, want)
	}
}

// The block has vLLM's shape, whatever the golden file says.
func TestWriteTextVLLMStyle(t *testing.T) {
	var buf bytes.Buffer
	if err := sampleResult().Summary().WriteText(&buf); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	for _, line := range []string{
		"============ Serving Benchmark Result ============",
		"Successful requests:                     3",
		"Failed requests:                         3",
		"Canceled requests:                       1",
		"Benchmark duration (s):                  2.00",
		"Output token throughput (tok/s):         8.00",
		"---------------Time to First Token----------------",
		"Mean TTFT (ms):                          20.00",
		"Median TTFT (ms):                        20.00",
		"P99 TTFT (ms):                           29.80",
		"P99.9 TTFT (ms):                         29.98",
		"P99.99 TTFT (ms):                        30.00",
		"-----Time per Output Token (excl. 1st token)------",
		"Median TPOT (ms):                        2.92",
		"---------------Inter-token Latency----------------",
		"P90 ITL (ms):                            8.80",
		"----------------End-to-end Latency----------------",
		"Max E2EL (ms):                           100.00",
		"==================================================",
		"      2  HTTP 503: busy",
	} {
		if !strings.Contains(out, line+"\n") {
			t.Errorf("missing line %q in\n%s", line, out)
		}
	}
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(l, "==") || strings.HasPrefix(l, "--") {
			if len(l) != 50 {
				t.Errorf("rule %q is %d wide, want 50", l, len(l))
			}
		}
		if strings.HasSuffix(l, " ") {
			t.Errorf("trailing space in %q", l)
		}
	}
	// A summary without samples prints n/a, never NaN.
	buf.Reset()
	if err := (&Result{}).Summary().WriteText(&buf); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(buf.String(), "NaN") || !strings.Contains(buf.String(), "Mean TTFT (ms):                          n/a") {
		t.Errorf("empty summary:\n%s", buf.String())
	}
}

func TestWriteJSON(t *testing.T) {
	var buf bytes.Buffer
	if err := sampleResult().Summary().WriteJSON(&buf); err != nil {
		t.Fatal(err)
	}
	var got struct {
		Schema     string  `json:"schema"`
		Successful int     `json:"successful"`
		Failed     int     `json:"failed"`
		ErrorRate  float64 `json:"error_rate"`
		TTFT       struct {
			Count int     `json:"count"`
			P50   float64 `json:"p50"`
			P99   float64 `json:"p99"`
			P9999 float64 `json:"p9999"`
		} `json:"ttft_ms"`
		ITL struct {
			P90 float64 `json:"p90"`
		} `json:"itl_ms"`
		Types []struct {
			Name string `json:"name"`
		} `json:"types"`
		Errors []struct {
			Message string `json:"message"`
			Count   int    `json:"count"`
		} `json:"errors"`
	}
	if err := json.Unmarshal(buf.Bytes(), &got); err != nil {
		t.Fatalf("%v\n%s", err, buf.String())
	}
	if got.Schema != JSONSchema || got.Successful != 3 || got.Failed != 3 || got.ErrorRate != 0.5 {
		t.Errorf("header fields: %+v", got)
	}
	if got.TTFT.Count != 2 || got.TTFT.P50 != 20 || got.TTFT.P99 != 29.8 || got.TTFT.P9999 != 29.998 || got.ITL.P90 != 8.8 {
		t.Errorf("stats in ms: %+v %+v", got.TTFT, got.ITL)
	}
	if len(got.Types) != 3 || got.Types[2].Name != "intruder" || len(got.Errors) != 2 || got.Errors[0].Count != 2 {
		t.Errorf("types, errors: %+v %+v", got.Types, got.Errors)
	}
}
