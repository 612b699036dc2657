package ssestream

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// recSink records deep copies of all chunks.
type recSink struct{ got []rec }

func (s *recSink) OnChunk(c *Chunk) { s.got = append(s.got, toRec(c)) }

// countSink counts without allocating.
type countSink struct{ chunks, tokens int }

func (s *countSink) OnChunk(c *Chunk) {
	s.chunks++
	s.tokens += c.Tokens
}

type counters struct{ Lines, DataLines, MalformedLines, OversizedLines int }

func countersOf(p *Parser) counters {
	return counters{p.Lines, p.DataLines, p.MalformedLines, p.OversizedLines}
}

// realisticStream builds an OpenAI/vLLM-style stream with n content chunks,
// decorated with comments and other fields. It returns the stream and the
// data payloads in order.
func realisticStream(n int) (string, []string) {
	const head = `{"id":"chatcmpl-abc123","object":"chat.completion.chunk","created":1718000000,"model":"meta-llama/Llama-3.1-8B-Instruct",`
	var payloads []string
	payloads = append(payloads, head+`"choices":[{"index":0,"delta":{"role":"assistant","content":""},"logprobs":null,"finish_reason":null}]}`)
	for i := range n {
		payloads = append(payloads, fmt.Sprintf(head+`"choices":[{"index":0,"delta":{"content":" tok%d \"q\" \\ \u00e9"},"logprobs":null,"finish_reason":null}]}`, i))
	}
	payloads = append(payloads,
		head+`"choices":[{"index":0,"delta":{},"logprobs":null,"finish_reason":"stop","stop_reason":null}]}`,
		head+`"choices":[],"usage":{"prompt_tokens":12,"total_tokens":62,"completion_tokens":50}}`,
		`[DONE]`,
	)
	var b strings.Builder
	b.WriteString(": ping\n\n")
	b.WriteString("retry: 3000\n")
	for i, p := range payloads {
		if i%10 == 3 {
			b.WriteString(": keep-alive comment\n")
		}
		if i%7 == 0 {
			b.WriteString("event: message\n")
			fmt.Fprintf(&b, "id: %d\n", i)
		}
		b.WriteString("data: ")
		b.WriteString(p)
		b.WriteString("\n\n")
	}
	return b.String(), payloads
}

func feedWhole(p *Parser, in []byte) []rec {
	var s recSink
	p.Feed(in, &s)
	p.Close(&s)
	return s.got
}

func feedSplits(t testing.TB, p *Parser, in []byte, cuts []int) []rec {
	var s recSink
	prev := 0
	for _, c := range cuts {
		p.Feed(in[prev:c], &s)
		checkBuf(t, p)
		prev = c
	}
	p.Feed(in[prev:], &s)
	checkBuf(t, p)
	p.Close(&s)
	return s.got
}

func checkBuf(t testing.TB, p *Parser) {
	t.Helper()
	if limit := p.maxLine(); cap(p.buf) > limit || len(p.buf) > limit {
		t.Fatalf("buffer len %d cap %d exceeds MaxLine %d", len(p.buf), cap(p.buf), limit)
	}
}

func randomCuts(r *rand.Rand, n int) []int {
	var cuts []int
	for pos := 0; ; {
		pos += 1 + r.IntN(300)
		if pos >= n {
			return cuts
		}
		cuts = append(cuts, pos)
	}
}

func TestParserRealisticStream(t *testing.T) {
	lf, payloads := realisticStream(50)
	var want []rec
	for _, pl := range payloads {
		c := ScanChunk([]byte(pl))
		want = append(want, toRec(&c))
	}
	// Sanity of the expectations themselves.
	tokens := 0
	for _, r := range want {
		tokens += r.Tokens
		if r.Malformed {
			t.Fatalf("unexpected malformed chunk %v", r)
		}
	}
	if tokens != 50 {
		t.Fatalf("want 50 token chunks, got %d", tokens)
	}
	if w := want[51]; w.Finish != "stop" || w.Tokens != 0 {
		t.Fatalf("finish chunk: %v", w)
	}
	if w := want[52]; !w.HasUsage || w.Prompt != 12 || w.Completion != 50 {
		t.Fatalf("usage chunk: %v", w)
	}
	if !want[53].Done {
		t.Fatalf("last chunk not Done: %v", want[53])
	}
	if want[0].Model != "meta-llama/Llama-3.1-8B-Instruct" || want[0].ID != "chatcmpl-abc123" {
		t.Fatalf("role chunk: %v", want[0])
	}

	crlf := strings.ReplaceAll(lf, "\n", "\r\n")
	noFinalNL := strings.TrimRight(lf, "\n")
	for _, v := range []struct{ name, stream string }{{"LF", lf}, {"CRLF", crlf}, {"NoFinalNewline", noFinalNL}} {
		in := []byte(v.stream)
		t.Run(v.name, func(t *testing.T) {
			var ref counters
			check := func(t *testing.T, p *Parser, got []rec) {
				t.Helper()
				if !slices.Equal(got, want) {
					t.Fatalf("chunk sequence differs: got %d chunks, want %d\n%v", len(got), len(want), firstDiff(got, want))
				}
				c := countersOf(p)
				if ref == (counters{}) {
					ref = c
				} else if c != ref {
					t.Fatalf("counters %+v, want %+v", c, ref)
				}
				if c.DataLines != len(want) || c.MalformedLines != 0 || c.OversizedLines != 0 {
					t.Fatalf("counters %+v", c)
				}
			}
			t.Run("whole", func(t *testing.T) {
				var p Parser
				check(t, &p, feedWhole(&p, in))
			})
			t.Run("bytewise", func(t *testing.T) {
				var p Parser
				cuts := make([]int, 0, len(in))
				for i := 1; i < len(in); i++ {
					cuts = append(cuts, i)
				}
				check(t, &p, feedSplits(t, &p, in, cuts))
			})
			t.Run("random", func(t *testing.T) {
				r := rand.New(rand.NewPCG(42, 7))
				var p Parser
				for range 50 {
					p.Reset()
					check(t, &p, feedSplits(t, &p, in, randomCuts(r, len(in))))
				}
			})
			t.Run("small MaxLine is big enough", func(t *testing.T) {
				// The longest line fits exactly: nothing may be truncated.
				longest := 0
				for l := range strings.SplitSeq(v.stream, "\n") {
					longest = max(longest, len(l))
				}
				r := rand.New(rand.NewPCG(1, 2))
				p := Parser{MaxLine: longest}
				check(t, &p, feedSplits(t, &p, in, randomCuts(r, len(in))))
			})
		})
	}
}

func firstDiff(got, want []rec) string {
	for i := range min(len(got), len(want)) {
		if got[i] != want[i] {
			return fmt.Sprintf("at %d:\n got %v\nwant %v", i, got[i], want[i])
		}
	}
	return "length differs"
}

func TestParserLineRules(t *testing.T) {
	in := "" +
		": comment with data: {\"choices\":[{\"text\":\"x\"}]}\n" +
		"event: data\n" +
		"id: 1\n" +
		"retry: 10\n" +
		"database: {\"choices\":[{\"text\":\"x\"}]}\n" +
		"data\n" +
		"data:\n" +
		"data:   \n" +
		"\n\r\n" +
		"data:{\"id\":\"nospace\"}\n" +
		"data:  {\"id\":\"twospaces\"}\n" +
		"data: not json\n" +
		"data: [DONE]\n"
	var p Parser
	got := feedWhole(&p, []byte(in))
	want := []rec{{ID: "nospace"}, {ID: "twospaces"}, {Malformed: true}, {Done: true}}
	if !slices.Equal(got, want) {
		t.Fatalf("got %v\nwant %v", got, want)
	}
	if c := countersOf(&p); c != (counters{Lines: 12, DataLines: 4, MalformedLines: 1}) {
		t.Fatalf("counters %+v", c)
	}
}

func TestParserOversized(t *testing.T) {
	long := `data: {"id":"x","choices":[{"delta":{"content":"` + strings.Repeat("a", 100) + `"}}]}`
	in := "data: {\"id\":\"a\"}\n" + long + "\n" + long + "\r\n" + "data: {\"id\":\"b\"}\n" + long
	const limit = 60
	want := []rec{
		{ID: "a"},
		{ID: "x", Tokens: 1, Malformed: true, Truncated: true},
		{ID: "x", Tokens: 1, Malformed: true, Truncated: true},
		{ID: "b"},
		{ID: "x", Tokens: 1, Malformed: true, Truncated: true},
	}
	wantCounters := counters{Lines: 5, DataLines: 5, MalformedLines: 3, OversizedLines: 3}
	r := rand.New(rand.NewPCG(3, 4))
	for i := range 30 {
		var cuts []int
		switch i {
		case 0:
		case 1:
			for j := 1; j < len(in); j++ {
				cuts = append(cuts, j)
			}
		default:
			cuts = randomCuts(r, len(in))
		}
		p := Parser{MaxLine: limit}
		got := feedSplits(t, &p, []byte(in), cuts)
		if !slices.Equal(got, want) {
			t.Fatalf("split %d: got %v\nwant %v", i, got, want)
		}
		if c := countersOf(&p); c != wantCounters {
			t.Fatalf("split %d: counters %+v, want %+v", i, c, wantCounters)
		}
	}
}

func TestParserExactMaxLine(t *testing.T) {
	line := `data: {"id":"x"}`
	for _, term := range []string{"\n", "\r\n"} {
		in := line + term + line + term
		limit := len(line) + len(term) - 1 // '\r' counts towards MaxLine
		for _, cut := range []int{0, 3, len(line), len(line) + 1, len(in) - 1} {
			p := Parser{MaxLine: limit}
			got := feedSplits(t, &p, []byte(in), []int{cut})
			if want := []rec{{ID: "x"}, {ID: "x"}}; !slices.Equal(got, want) {
				t.Fatalf("term %q cut %d: got %v", term, cut, got)
			}
			p = Parser{MaxLine: limit - 1}
			got = feedSplits(t, &p, []byte(in), []int{cut})
			if p.OversizedLines != 2 || len(got) != 2 || !got[0].Truncated {
				t.Fatalf("term %q cut %d, MaxLine-1: got %v, %+v", term, cut, got, countersOf(&p))
			}
		}
	}
}

func TestParserClose(t *testing.T) {
	var p Parser
	var s recSink
	p.Feed([]byte("data: {\"id\":\"1\"}\ndata: {\"id\":"), &s)
	p.Feed([]byte("\"2\"}"), &s)
	if len(s.got) != 1 {
		t.Fatalf("pending line delivered before Close: %v", s.got)
	}
	p.Close(&s)
	if want := []rec{{ID: "1"}, {ID: "2"}}; !slices.Equal(s.got, want) {
		t.Fatalf("got %v, want %v", s.got, want)
	}
	if p.DataLines != 2 {
		t.Fatalf("counters must survive Close: %+v", countersOf(&p))
	}
	// Close resets the line state: the next stream starts clean.
	s.got = nil
	p.Feed([]byte("data: [DONE]\r"), &s)
	p.Close(&s)
	p.Close(&s) // idempotent
	if want := []rec{{Done: true}}; !slices.Equal(s.got, want) {
		t.Fatalf("got %v, want %v", s.got, want)
	}
	// A pending oversized tail is not delivered a second time.
	s.got = nil
	p = Parser{MaxLine: 8}
	p.Feed([]byte("data: {\"id\":\"123456\"}"), &s)
	p.Close(&s)
	if len(s.got) != 1 || !s.got[0].Truncated {
		t.Fatalf("got %v", s.got)
	}
}

func TestParserResetAndNilSink(t *testing.T) {
	var p Parser
	p.Feed([]byte("data: {\"choices\":[{\"text\":\"x\"}]}\ndata: {\"id\":"), nil)
	c := cap(p.buf)
	if c == 0 || p.DataLines != 1 {
		t.Fatalf("cap %d, counters %+v", c, countersOf(&p))
	}
	p.Reset()
	if len(p.buf) != 0 || cap(p.buf) != c || countersOf(&p) != (counters{}) {
		t.Fatalf("after Reset: len %d cap %d counters %+v", len(p.buf), cap(p.buf), countersOf(&p))
	}
	var s recSink
	p.Feed([]byte("\"x\"}\ndata: {\"id\":\"y\"}\n"), &s)
	// The tail of the previous stream must be gone: the first line is now
	// `"x"}` (not a data line).
	if want := []rec{{ID: "y"}}; !slices.Equal(s.got, want) {
		t.Fatalf("got %v", s.got)
	}
}

func TestParserFeedAllocs(t *testing.T) {
	stream, payloads := realisticStream(100)
	in := []byte(stream)
	var p Parser
	var s countSink
	// Warm up: grow the buffer by feeding in pieces once.
	for i := 0; i < len(in); i += 777 {
		p.Feed(in[i:min(i+777, len(in))], &s)
	}
	p.Close(&s)
	p.Reset()
	s = countSink{}
	if n := testing.AllocsPerRun(100, func() {
		p.Feed(in, &s)
		p.Close(&s)
	}); n != 0 {
		t.Errorf("Feed(whole): %v allocs/op, want 0", n)
	}
	if n := testing.AllocsPerRun(100, func() {
		for i := 0; i < len(in); i += 777 {
			p.Feed(in[i:min(i+777, len(in))], &s)
		}
		p.Close(&s)
	}); n != 0 {
		t.Errorf("Feed(pieces): %v allocs/op, want 0", n)
	}
	if s.chunks%len(payloads) != 0 || s.tokens != s.chunks/len(payloads)*100 {
		t.Fatalf("sink saw %d chunks %d tokens", s.chunks, s.tokens)
	}
}
