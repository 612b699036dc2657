package report_test

import (
	"os"

	"github.com/tokentrace/tokentrace/analyzer/report"
)

func ExampleWrite() {
	rpt := &report.Report{
		Schema: report.Schema,
		Source: "spans.json",
		Requests: []report.Request{{
			TraceID: "4f2a9c1e5b7d3f8a0c2e4b6d8f0a1c3e", Instance: "gpu-0:8000", Model: "llama-3-8b",
			Tokens: 101, TTFTMs: 350, TPOTMs: 53.5,
			Segments: []report.Segment{{
				StartToken: 51, EndToken: 100, Kind: "run", BaselineMs: 22, MedianMs: 85, Slowdown: 3.86, LostMs: 3150,
				Cause: report.CausePrefill, Confidence: 0.85,
				Evidence: []report.Evidence{{Kind: "cross_trace_prefill", TraceID: "9be1d0a47c3e4f5a", OverlapMs: 1200, PromptTokens: 3100}},
			}},
		}},
	}
	// tokentrace trace: the request alone, in depth.
	report.Write(os.Stdout, rpt, "text", report.Options{RequestsOnly: true, JaegerUI: "http://localhost:16686"})
	// Output:
	// tokentrace report · spans.json · sensitivity 0
	//
	// #1 4f2a9c1e5b7d3f8a0c2e4b6d8f0a1c3e · llama-3-8b · gpu-0:8000 · 101 tokens · TTFT 350ms · TPOT 53.5ms · lost 3.1 s
	//    http://localhost:16686/trace/4f2a9c1e5b7d3f8a0c2e4b6d8f0a1c3e
	//    [1-50]    ▇▇▇▇▇▇                ≈22 ms/token
	//    [51-100]  ▇▇▇▇▇▇▇▇▇▇▇▇▇▇▇▇▇▇▇▇   85 ms/token  ← degraded ×3.9: prefill of 9be1d0a4… (3,100 prompt tokens), overlap 1.2 s, confidence 0.85
}
