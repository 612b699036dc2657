package loadgen

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"strings"
	"text/tabwriter"
	"time"
)

// JSONSchema names the format written by [Summary.WriteJSON].
const JSONSchema = "tokentrace.loadgen/v1"

// maxErrorLines is how many distinct error messages WriteText lists.
const maxErrorLines = 10

const reportWidth = 50

// WriteText writes the summary in the style of vLLM's benchmark
// (vllm bench serve): a block of figures in milliseconds, then a table
// per request type and the most frequent error messages.
func (s Summary) WriteText(w io.Writer) error {
	bw := bufio.NewWriter(w)
	line := func(label string, format string, v ...any) {
		fmt.Fprintf(bw, "%-40s "+format+"\n", append([]any{label}, v...)...)
	}
	fmt.Fprintln(bw, center(" Serving Benchmark Result ", '='))
	line("Successful requests:", "%d", s.Successful)
	line("Failed requests:", "%d", s.Failed)
	if s.Canceled > 0 {
		line("Canceled requests:", "%d", s.Canceled)
	}
	line("Error rate (%):", "%.2f", 100*s.ErrorRate)
	if s.Stopped != "" {
		line("Stopped by:", "%s", s.Stopped)
	}
	line("Benchmark duration (s):", "%.2f", s.Duration.Seconds())
	line("Total input tokens:", "%d", s.InputTokens)
	line("Total generated tokens:", "%d", s.OutputTokens)
	line("Request throughput (req/s):", "%.2f", s.RequestThroughput)
	line("Output token throughput (tok/s):", "%.2f", s.OutputThroughput)
	line("Arrivals delayed by concurrency limit:", "%d", s.Waited)
	line("Total concurrency wait (s):", "%.3f", s.TotalWait.Seconds())
	line("Max concurrency wait (ms):", "%.2f", ms(s.MaxWait))
	section := func(title, short string, st Stats) {
		fmt.Fprintln(bw, center(title, '-'))
		line(short+" samples:", "%d", st.Count)
		for _, row := range []struct {
			name string
			v    time.Duration
		}{{"Mean", st.Mean}, {"Median", st.Median}, {"P90", st.P90}, {"P99", st.P99},
			{"P99.9", st.P999}, {"P99.99", st.P9999}, {"Max", st.Max}} {
			label := fmt.Sprintf("%s %s (ms):", row.name, short)
			if st.Count == 0 {
				line(label, "%s", "n/a")
			} else {
				line(label, "%.2f", ms(row.v))
			}
		}
	}
	section("Time to First Token", "TTFT", s.TTFT)
	section("Time per Output Token (excl. 1st token)", "TPOT", s.TPOT)
	section("Inter-token Latency", "ITL", s.ITL)
	section("End-to-end Latency", "E2EL", s.E2E)
	fmt.Fprintln(bw, strings.Repeat("=", reportWidth))

	if len(s.Types) > 0 {
		fmt.Fprintln(bw)
		fmt.Fprintln(bw, "Per request type (ms):")
		tw := tabwriter.NewWriter(bw, 0, 0, 2, ' ', tabwriter.AlignRight)
		nameWidth := len("type")
		for _, t := range s.Types {
			nameWidth = max(nameWidth, len(t.Name))
		}
		fmt.Fprintf(tw, "%-*s\tsent\tok\tfailed\tout tok\tTTFT mean\tTTFT p99\tTPOT mean\tTPOT p99\tITL p99\tE2EL p50\tE2EL p99\t\n", nameWidth, "type")
		for _, t := range s.Types {
			fmt.Fprintf(tw, "%-*s\t%d\t%d\t%d\t%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t\n",
				nameWidth, t.Name, t.Requests, t.Successful, t.Failed, t.OutputTokens,
				msCell(t.TTFT, t.TTFT.Mean), msCell(t.TTFT, t.TTFT.P99),
				msCell(t.TPOT, t.TPOT.Mean), msCell(t.TPOT, t.TPOT.P99),
				msCell(t.ITL, t.ITL.P99),
				msCell(t.E2E, t.E2E.Median), msCell(t.E2E, t.E2E.P99))
		}
		tw.Flush()
	}
	if len(s.Errors) > 0 {
		fmt.Fprintln(bw)
		fmt.Fprintln(bw, "Errors (by count):")
		for i, e := range s.Errors {
			if i == maxErrorLines {
				fmt.Fprintf(bw, "%7s  ... and %d more distinct messages\n", "", len(s.Errors)-maxErrorLines)
				break
			}
			fmt.Fprintf(bw, "%7d  %s\n", e.Count, e.Message)
		}
	}
	return bw.Flush()
}

// center centres title in a line of reportWidth fill characters, the way
// Python's "{:=^50}" does (an odd fill leaves the extra one on the right).
func center(title string, fill byte) string {
	n := reportWidth - len(title)
	if n <= 0 {
		return title
	}
	left := n / 2
	return strings.Repeat(string(fill), left) + title + strings.Repeat(string(fill), n-left)
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

func msCell(st Stats, v time.Duration) string {
	if st.Count == 0 {
		return "-"
	}
	return fmt.Sprintf("%.2f", ms(v))
}

// JSON forms: durations in milliseconds (seconds for run-long figures).
type (
	jsonStats struct {
		Count int     `json:"count"`
		Mean  float64 `json:"mean"`
		P50   float64 `json:"p50"`
		P90   float64 `json:"p90"`
		P99   float64 `json:"p99"`
		P999  float64 `json:"p999"`
		P9999 float64 `json:"p9999"`
		Max   float64 `json:"max"`
	}
	jsonType struct {
		Name         string    `json:"name"`
		Requests     int       `json:"requests"`
		Successful   int       `json:"successful"`
		Failed       int       `json:"failed"`
		OutputTokens int       `json:"output_tokens"`
		TTFT         jsonStats `json:"ttft_ms"`
		TPOT         jsonStats `json:"tpot_ms"`
		ITL          jsonStats `json:"itl_ms"`
		E2E          jsonStats `json:"e2e_ms"`
	}
	jsonError struct {
		Message string `json:"message"`
		Count   int    `json:"count"`
	}
	jsonSummary struct {
		Schema            string      `json:"schema"`
		Requests          int         `json:"requests"`
		Successful        int         `json:"successful"`
		Failed            int         `json:"failed"`
		Canceled          int         `json:"canceled"`
		ErrorRate         float64     `json:"error_rate"`
		Stopped           StopReason  `json:"stopped,omitempty"`
		DurationS         float64     `json:"duration_s"`
		InputTokens       int         `json:"input_tokens"`
		OutputTokens      int         `json:"output_tokens"`
		RequestThroughput float64     `json:"request_throughput"`
		OutputThroughput  float64     `json:"output_throughput"`
		Waited            int         `json:"waited"`
		TotalWaitS        float64     `json:"total_wait_s"`
		MaxWaitMS         float64     `json:"max_wait_ms"`
		TTFT              jsonStats   `json:"ttft_ms"`
		TPOT              jsonStats   `json:"tpot_ms"`
		ITL               jsonStats   `json:"itl_ms"`
		E2E               jsonStats   `json:"e2e_ms"`
		Types             []jsonType  `json:"types"`
		Errors            []jsonError `json:"errors"`
	}
)

func toJSONStats(s Stats) jsonStats {
	return jsonStats{Count: s.Count, Mean: ms(s.Mean), P50: ms(s.Median), P90: ms(s.P90), P99: ms(s.P99),
		P999: ms(s.P999), P9999: ms(s.P9999), Max: ms(s.Max)}
}

// WriteJSON writes the summary as one indented JSON object (schema
// JSONSchema): the figures of WriteText with the same names as the
// tokentrace analyzer's report ("ttft_ms": {"count", "mean", "p50", "p90",
// "p99", "p999", "p9999", "max"}), durations in milliseconds.
func (s Summary) WriteJSON(w io.Writer) error {
	j := jsonSummary{
		Schema: JSONSchema, Requests: s.Requests, Successful: s.Successful, Failed: s.Failed,
		Canceled: s.Canceled, ErrorRate: finite(s.ErrorRate), Stopped: s.Stopped,
		DurationS: s.Duration.Seconds(), InputTokens: s.InputTokens, OutputTokens: s.OutputTokens,
		RequestThroughput: finite(s.RequestThroughput), OutputThroughput: finite(s.OutputThroughput),
		Waited: s.Waited, TotalWaitS: s.TotalWait.Seconds(), MaxWaitMS: ms(s.MaxWait),
		TTFT: toJSONStats(s.TTFT), TPOT: toJSONStats(s.TPOT), ITL: toJSONStats(s.ITL), E2E: toJSONStats(s.E2E),
		Types: []jsonType{}, Errors: []jsonError{},
	}
	for _, t := range s.Types {
		j.Types = append(j.Types, jsonType{Name: t.Name, Requests: t.Requests, Successful: t.Successful,
			Failed: t.Failed, OutputTokens: t.OutputTokens, TTFT: toJSONStats(t.TTFT),
			TPOT: toJSONStats(t.TPOT), ITL: toJSONStats(t.ITL), E2E: toJSONStats(t.E2E)})
	}
	for _, e := range s.Errors {
		j.Errors = append(j.Errors, jsonError{Message: e.Message, Count: e.Count})
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(j)
}

func finite(v float64) float64 {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return 0
	}
	return v
}
