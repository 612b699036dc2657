package ssestream

import (
	"strconv"
	"strings"
	"testing"
)

// benchChunk is a typical vLLM chat completion chunk (~220 bytes).
const benchChunk = `{"id":"chatcmpl-9c6f1a2b3d4e4f60a18293a4b5c6d7e8","object":"chat.completion.chunk","created":1718000000,"model":"meta-llama/Llama-3.1-8B-Instruct","choices":[{"index":0,"delta":{"content":" world"},"logprobs":null,"finish_reason":null}]}`

var benchSinkChunk Chunk

func BenchmarkScanChunk(b *testing.B) {
	for _, bc := range []struct{ name, in string }{
		{"vllm", benchChunk},
		{"usage", `{"id":"chatcmpl-9c6f1a2b3d4e4f60a18293a4b5c6d7e8","object":"chat.completion.chunk","created":1718000000,"model":"meta-llama/Llama-3.1-8B-Instruct","choices":[],"usage":{"prompt_tokens":12,"total_tokens":62,"completion_tokens":50}}`},
		{"python-spaces", `{"id": "chatcmpl-9c6f1a2b3d4e4f60a18293a4b5c6d7e8", "object": "chat.completion.chunk", "created": 1718000000, "model": "meta-llama/Llama-3.1-8B-Instruct", "choices": [{"index": 0, "delta": {"content": " world"}, "logprobs": null, "finish_reason": null}]}`},
	} {
		in := []byte(bc.in)
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(in)))
			for b.Loop() {
				benchSinkChunk = ScanChunk(in)
			}
		})
	}
}

// benchTokens are token texts as a tokenizer streams them (JSON-escaped).
var benchTokens = []string{
	" The", " quick", " brown", " fox", ",", " jumps", " over", " the", " lazy", " dog", ".",
	`\n\n`, "##", " Step", " ", "1", ":", " compute", " `", "x", "`", " =", " ", "4", "2",
	` \"`, "hello", `\"`, " caf", "é", " 日本", "語", " and", " tokenization", "!", `\n`,
}

// benchStream builds an SSE stream of one of the shapes the middleware sees,
// with n token-bearing chunks, framed as servers do ("data: ...\n\n"). It
// returns the stream and its data payloads in order.
//
//   - vllm-chat: vLLM /v1/chat/completions (role chunk, content chunks,
//     finish chunk, final usage chunk, [DONE]).
//   - completions: vLLM /v1/completions (choices[].text).
//   - continuous-usage: vLLM chat with stream_options.continuous_usage_stats
//     (every chunk carries a usage object whose numbers change).
//   - python-spaces: a Python server serialising with json.dumps defaults
//     (", " and ": " separators).
func benchStream(kind string, n int) (string, []string) {
	const id = "chatcmpl-9c6f1a2b3d4e4f60a18293a4b5c6d7e8"
	const model = "meta-llama/Llama-3.1-8B-Instruct"
	head := `{"id":"` + id + `","object":"chat.completion.chunk","created":1718000000,"model":"` + model + `",`
	var payloads []string
	tok := func(i int) string { return benchTokens[i%len(benchTokens)] }
	switch kind {
	case "vllm-chat", "python-spaces":
		payloads = append(payloads, head+`"choices":[{"index":0,"delta":{"role":"assistant","content":""},"logprobs":null,"finish_reason":null}]}`)
		for i := range n {
			payloads = append(payloads, head+`"choices":[{"index":0,"delta":{"content":"`+tok(i)+`"},"logprobs":null,"finish_reason":null}]}`)
		}
		payloads = append(payloads,
			head+`"choices":[{"index":0,"delta":{"content":""},"logprobs":null,"finish_reason":"stop","stop_reason":null}]}`,
			head+`"choices":[],"usage":{"prompt_tokens":12,"total_tokens":`+strconv.Itoa(12+n)+`,"completion_tokens":`+strconv.Itoa(n)+`}}`)
		if kind == "python-spaces" {
			for i, p := range payloads {
				payloads[i] = pythonSpaces(p)
			}
		}
	case "completions":
		head := `{"id":"cmpl-9c6f1a2b3d4e4f60a18293a4b5c6d7e8","object":"text_completion","created":1718000000,"model":"` + model + `",`
		for i := range n {
			payloads = append(payloads, head+`"choices":[{"index":0,"text":"`+tok(i)+`","logprobs":null,"finish_reason":null,"stop_reason":null}]}`)
		}
		payloads = append(payloads,
			head+`"choices":[{"index":0,"text":"","logprobs":null,"finish_reason":"length","stop_reason":null}]}`,
			head+`"choices":[],"usage":{"prompt_tokens":12,"total_tokens":`+strconv.Itoa(12+n)+`,"completion_tokens":`+strconv.Itoa(n)+`}}`)
	case "continuous-usage":
		usage := func(c int) string {
			return `"usage":{"prompt_tokens":12,"total_tokens":` + strconv.Itoa(12+c) + `,"completion_tokens":` + strconv.Itoa(c) + `}}`
		}
		payloads = append(payloads, head+`"choices":[{"index":0,"delta":{"role":"assistant","content":""},"logprobs":null,"finish_reason":null}],`+usage(0))
		for i := range n {
			payloads = append(payloads, head+`"choices":[{"index":0,"delta":{"content":"`+tok(i)+`"},"logprobs":null,"finish_reason":null}],`+usage(i+1))
		}
		payloads = append(payloads,
			head+`"choices":[{"index":0,"delta":{"content":""},"logprobs":null,"finish_reason":"stop","stop_reason":null}],`+usage(n),
			head+`"choices":[],`+usage(n))
	default:
		panic("unknown stream kind " + kind)
	}
	payloads = append(payloads, "[DONE]")
	var b strings.Builder
	for _, p := range payloads {
		b.WriteString("data: ")
		b.WriteString(p)
		b.WriteString("\n\n")
	}
	return b.String(), payloads
}

// pythonSpaces re-serialises a compact JSON payload with json.dumps' default
// separators (", " and ": "), leaving string contents alone.
func pythonSpaces(p string) string {
	var b strings.Builder
	in := false
	for i := 0; i < len(p); i++ {
		c := p[i]
		b.WriteByte(c)
		switch {
		case in && c == '\\' && i+1 < len(p):
			i++
			b.WriteByte(p[i])
		case c == '"':
			in = !in
		case !in && (c == ',' || c == ':'):
			b.WriteByte(' ')
		}
	}
	return b.String()
}

// BenchmarkParserFeed feeds whole streams to a Parser and reports the cost
// per data line (ns/chunk). per-event: one Feed per SSE event, as a
// streaming proxy flushes them; 4KiB-writes: lines split across writes
// (pending-line buffer); whole: the stream in one Feed.
func BenchmarkParserFeed(b *testing.B) {
	const chunks = 1000
	for _, kind := range []string{"vllm-chat", "completions", "continuous-usage", "python-spaces"} {
		stream, payloads := benchStream(kind, chunks)
		in := []byte(stream)
		n := len(payloads)
		for _, bc := range []struct {
			name  string
			piece int
		}{{"per-event", 0}, {"4KiB-writes", 4 << 10}, {"whole", len(in)}} {
			b.Run(kind+"/"+bc.name, func(b *testing.B) {
				var p Parser
				var s countSink
				var pieces [][]byte
				if bc.piece == 0 {
					start := 0
					for i := 0; i < len(in); i++ {
						if in[i] == '\n' && i+1 < len(in) && in[i+1] == '\n' {
							pieces = append(pieces, in[start:i+2])
							start = i + 2
							i++
						}
					}
					if start < len(in) {
						pieces = append(pieces, in[start:])
					}
				} else {
					for i := 0; i < len(in); i += bc.piece {
						pieces = append(pieces, in[i:min(i+bc.piece, len(in))])
					}
				}
				b.ReportAllocs()
				b.SetBytes(int64(len(in)))
				for b.Loop() {
					for _, pc := range pieces {
						p.Feed(pc, &s)
					}
					p.Close(&s)
					p.Reset()
				}
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/chunk")
				if s.chunks != b.N*n {
					b.Fatalf("sink saw %d chunks, want %d", s.chunks, b.N*n)
				}
				if s.tokens != b.N*chunks {
					b.Fatalf("sink saw %d token chunks, want %d", s.tokens, b.N*chunks)
				}
			})
		}
	}
}

// TestBenchStreams checks the benchmark inputs against ScanChunk and the
// encoding/json reference.
func TestBenchStreams(t *testing.T) {
	for _, kind := range []string{"vllm-chat", "completions", "continuous-usage", "python-spaces"} {
		_, payloads := benchStream(kind, 50)
		tokens := 0
		for _, pl := range payloads {
			checkScan(t, []byte(pl))
			c := ScanChunk([]byte(pl))
			if c.Malformed {
				t.Fatalf("%s: malformed %s", kind, pl)
			}
			tokens += c.Tokens
		}
		if tokens != 50 {
			t.Fatalf("%s: %d token chunks, want 50", kind, tokens)
		}
	}
}
