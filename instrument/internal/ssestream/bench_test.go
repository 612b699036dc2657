package ssestream

import "testing"

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

func BenchmarkParserFeed(b *testing.B) {
	const chunks = 1000
	stream, payloads := realisticStream(chunks - 4) // role + content + finish + usage + [DONE]
	in := []byte(stream)
	n := len(payloads)
	for _, bc := range []struct {
		name  string
		piece int
	}{{"whole", len(in)}, {"4KiB-writes", 4 << 10}, {"per-chunk-writes", 0}} {
		b.Run(bc.name, func(b *testing.B) {
			var p Parser
			var s countSink
			var pieces [][]byte
			if bc.piece == 0 {
				// One write per SSE event, as a streaming proxy flushes them.
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
		})
	}
}
