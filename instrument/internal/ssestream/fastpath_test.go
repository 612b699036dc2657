package ssestream

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unsafe"
)

// script hands out the bytes of a fuzz input one decision at a time (0 once
// exhausted).
type script struct {
	b []byte
	i int
}

func (s *script) done() bool { return s.i >= len(s.b) }

func (s *script) byte() byte {
	if s.i >= len(s.b) {
		return 0
	}
	c := s.b[s.i]
	s.i++
	return c
}

func (s *script) n(k int) int { return int(s.byte()) % k }

func (s *script) bytes(k int) []byte {
	k = min(k, len(s.b)-s.i)
	b := s.b[s.i : s.i+k]
	s.i += k
	return b
}

// Stream shapes of the fast path fuzzer.
const (
	shapeChat             = iota // vLLM chat: ..."choices":[{"index":0,"delta":{"content":T},...}]}
	shapeCompletions             // vLLM completions: choices[0].text
	shapeReasoning               // delta.reasoning_content then delta.content
	shapeChoicesFirst            // llama.cpp: choices first, id/model/usage after (in the tail)
	shapeMessage                 // choices[0].message.content
	shapeTwoChoices              // choices 0 and 1 alternate
	shapeUsageFirst              // usage before choices (usage numbers in the prefix)
	shapeToolCalls               // delta.tool_calls arguments (no resume point) mixed with content
	shapeToolsThenContent        // delta.tool_calls before content (Tokens already 1 in the prefix)
	nShapes
)

var (
	fpIDs    = []string{"chatcmpl-abc123", "", `a\"b`, `x\\`, "chatcmpl-9c6f1a2b3d4e4f60a18293a4b5c6d7e8", "cmpl-1"}
	fpModels = []string{"meta-llama/Llama-3.1-8B-Instruct", "m", "", `q\"w\\`, "gpt-4o-mini"}
)

// fpText returns a token text, usually JSON-escaped, sometimes raw bytes
// (which may break the JSON or the line).
func fpText(s *script) string {
	raw := s.bytes(s.n(13))
	switch s.n(10) {
	case 0:
		return string(raw)
	case 1:
		return []string{`\n`, `\"`, `\\`, `\u00e9`, `"},"x":"`, `\`, "日本", " ", "\n", "\r\n", "\nda", "\r"}[s.n(12)]
	}
	var b strings.Builder
	for _, c := range raw {
		switch {
		case c == '"' || c == '\\':
			b.WriteByte('\\')
			b.WriteByte(c)
		case c < 0x20:
			fmt.Fprintf(&b, `\u%04x`, c)
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

func fpNum(s *script) string {
	switch s.n(20) {
	case 0:
		return "0"
	case 1:
		return "-" + strconv.Itoa(s.n(100))
	case 2:
		return strconv.Itoa(s.n(100)) + ".5"
	case 3:
		return "1e3"
	case 4:
		return "99999999999"
	case 5:
		return `"7"`
	case 6:
		return "null"
	case 7:
		return "0" + strconv.Itoa(s.n(100)) // invalid: leading zero
	case 8:
		return "1E+2"
	case 9:
		return "2147483648"
	case 10:
		return "1" + string(rune('0'+s.n(10))) + "x" // invalid
	}
	return strconv.Itoa(int(s.byte())*int(s.byte()) + s.n(10))
}

func fpFinish(s *script) string {
	return []string{"null", "null", "null", `"stop"`, `""`, `"length"`, `"a\"b"`, "1"}[s.n(8)]
}

// fastPathStream builds an SSE stream from a realistic template, driven by
// the script: token texts, usage numbers, finish reasons, escapes, template
// changes, truncations, byte flips, whitespace and framing.
func fastPathStream(s *script, shape int) string {
	flags := s.byte()
	python := flags&1 != 0
	dataField := "data: "
	if flags&2 != 0 {
		dataField = "data:"
	}
	eol := "\n"
	if flags&4 != 0 {
		eol = "\r\n"
	}
	usageEvery := flags&8 != 0
	id, model := fpIDs[s.n(len(fpIDs))], fpModels[s.n(len(fpModels))]
	prompt := fpNum(s)
	usageKind := s.n(4)
	prompt2 := fpNum(s)
	usageLate := s.n(2) == 0
	completion := 0
	usage := func() string {
		completion++
		if s.n(8) == 0 {
			prompt = fpNum(s)
		}
		c := strconv.Itoa(completion)
		if s.n(8) == 0 {
			c = fpNum(s)
		}
		switch usageKind {
		case 1:
			return `"usage":{"prompt_tokens":` + prompt + `,"total_tokens":` + fpNum(s) + `,"completion_tokens":` + c + `,"prompt_tokens_details":{"cached_tokens":` + fpNum(s) + `}}`
		case 2:
			// More numbers than holes, and duplicate keys (the last wins).
			return `"usage":{"prompt_tokens":` + prompt + `,"completion_tokens":` + c + `,"total_tokens":` + fpNum(s) + `,"x":` + fpNum(s) +
				`,"prompt_tokens":` + prompt2 + `,"completion_tokens":` + strconv.Itoa(completion/4) + `}`
		case 3:
			return `"usage":{"completion_tokens":` + c + `,"prompt_tokens":` + prompt + `}`
		}
		return `"usage":{"prompt_tokens":` + prompt + `,"total_tokens":` + fpNum(s) + `,"completion_tokens":` + c + `}`
	}
	head := func() string {
		return `{"id":"` + id + `","object":"chat.completion.chunk","created":1718000000,"model":"` + model + `",`
	}
	index := 0
	// chunk returns a payload with value T for the token-bearing member.
	chunk := func(t, finish string) string {
		tail := `}`
		if usageEvery {
			tail = `,` + usage() + `}`
		}
		switch shape {
		case shapeCompletions:
			return head() + `"choices":[{"index":0,"text":"` + t + `","logprobs":null,"finish_reason":` + finish + `,"stop_reason":null}]` + tail
		case shapeReasoning:
			key := "reasoning_content"
			if completion > 5 {
				key = "content"
			}
			return head() + `"choices":[{"index":0,"delta":{"` + key + `":"` + t + `"},"logprobs":null,"finish_reason":` + finish + `}]` + tail
		case shapeChoicesFirst:
			u, early := "", ""
			if usageEvery {
				u = `,` + usage()
				if !usageLate {
					u, early = "", usage()+`,`
				}
			}
			return `{"choices":[{"finish_reason":` + finish + `,"index":0,"delta":{"content":"` + t + `"}}],` + early + `"created":1718000000,"id":"` + id + `","model":"` + model + `","system_fingerprint":"b4000","object":"chat.completion.chunk"` + u + `}`
		case shapeMessage:
			return head() + `"choices":[{"index":0,"message":{"role":"assistant","content":"` + t + `"},"finish_reason":` + finish + `}]` + tail
		case shapeTwoChoices:
			index ^= 1
			return head() + `"choices":[{"index":` + strconv.Itoa(index) + `,"delta":{"content":"` + t + `"},"logprobs":null,"finish_reason":` + finish + `}]` + tail
		case shapeUsageFirst:
			return `{"id":"` + id + `",` + usage() + `,"choices":[{"index":0,"delta":{"content":"` + t + `"},"finish_reason":` + finish + `}]}`
		case shapeToolsThenContent:
			tc := `[]`
			if completion%2 == 0 {
				tc = `[{"index":0}]`
			}
			completion++
			return head() + `"choices":[{"index":0,"delta":{"tool_calls":` + tc + `,"content":"` + t + `"},"logprobs":null,"finish_reason":` + finish + `}]` + tail
		case shapeToolCalls:
			if completion%3 == 0 {
				completion++
				return head() + `"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"` + t + `"}}]},"finish_reason":` + finish + `}]` + tail
			}
		}
		return head() + `"choices":[{"index":0,"delta":{"content":"` + t + `"},"logprobs":null,"finish_reason":` + finish + `}]` + tail
	}
	var b strings.Builder
	emit := func(p string) {
		if python {
			p = pythonSpaces(p)
		}
		b.WriteString(dataField)
		b.WriteString(p)
		b.WriteString(eol)
		b.WriteString(eol)
	}
	for n := 0; n < 300 && !s.done(); n++ {
		switch op := s.n(32); op {
		case 0:
			emit(head() + `"choices":[{"index":0,"delta":{"role":"assistant","content":""},"logprobs":null,"finish_reason":null}]}`)
		case 1:
			emit(chunk("", fpFinish(s)))
		case 2:
			emit(head() + `"choices":[],` + usage() + `}`)
		case 3:
			emit("[DONE]")
		case 4:
			id = fpIDs[s.n(len(fpIDs))]
		case 5:
			model = fpModels[s.n(len(fpModels))]
		case 6:
			b.WriteString([]string{": ping" + eol, "event: message" + eol, "id: 7" + eol, eol, "data:" + eol, "retry: 1" + eol}[s.n(6)])
		case 7:
			// Truncated payload.
			p := chunk(fpText(s), fpFinish(s))
			emit(p[:int(s.byte())*len(p)/256])
		case 8:
			// One byte changed.
			p := []byte(chunk(fpText(s), fpFinish(s)))
			const repl = "\"\\{}[],: a0\n\r\t"
			p[int(s.byte())*len(p)/256] = repl[s.n(len(repl))]
			emit(string(p))
		case 9:
			// Whitespace inserted.
			p := chunk(fpText(s), fpFinish(s))
			k := int(s.byte()) * len(p) / 256
			emit(p[:k] + []string{" ", "\t", "\r", "  \n"}[s.n(4)] + p[k:])
		case 10:
			python = !python
		case 11:
			emit(chunk(fpText(s), fpFinish(s)) + []string{" ", "x", "}", "\r", "  "}[s.n(5)])
		case 12:
			emit(" " + chunk(fpText(s), fpFinish(s)))
		case 13:
			emit(chunk(fpText(s), "null")[:0] + `{"error":{"message":"` + fpText(s) + `"}}`)
		default:
			emit(chunk(fpText(s), "null"))
		}
	}
	return b.String()
}

// refChunks applies the documented line rules with a plain split and scans
// every data payload with ScanChunk alone.
func refChunks(stream []byte, maxLine int) []rec {
	limit := maxLine
	if limit <= 0 {
		limit = DefaultMaxLine
	}
	var out []rec
	lines := bytes.Split(stream, []byte("\n"))
	if len(lines[len(lines)-1]) == 0 {
		lines = lines[:len(lines)-1] // the stream ends with "\n"
	}
	for _, l := range lines {
		trunc := len(l) > limit
		if trunc {
			l = l[:limit]
		} else {
			l = bytes.TrimSuffix(l, []byte("\r"))
		}
		p, ok := bytes.CutPrefix(l, []byte("data:"))
		if !ok {
			continue
		}
		p = bytes.TrimPrefix(p, []byte(" "))
		if len(bytes.Trim(p, " \t\r\n")) == 0 {
			continue
		}
		c := ScanChunk(p)
		c.Truncated = trunc
		out = append(out, toRec(&c))
	}
	return out
}

// aliasSink records chunks and checks that their byte slices point into the
// bytes the Parser was given in the current Feed (or its line buffer).
type aliasSink struct {
	t     *testing.T
	p     *Parser
	piece []byte
	got   []rec
}

func within(b, in []byte) bool {
	if len(b) == 0 || cap(in) == 0 {
		return len(b) == 0
	}
	lo := uintptr(unsafe.Pointer(unsafe.SliceData(in[:cap(in)])))
	p := uintptr(unsafe.Pointer(unsafe.SliceData(b)))
	return p >= lo && p+uintptr(len(b)) <= lo+uintptr(cap(in))
}

func (s *aliasSink) OnChunk(c *Chunk) {
	for _, b := range [][]byte{c.Model, c.ID, c.FinishReason} {
		if !within(b, s.piece) && !within(b, s.p.buf) {
			s.t.Fatalf("slice %q aliases neither the input nor the line buffer", b)
		}
	}
	s.got = append(s.got, toRec(c))
}

// feedPieces feeds the pieces to p, then Closes it, and returns the chunks.
// The buffer bound is checked unless MaxLine was lowered (the capacity
// allocated for the former MaxLine is kept).
func feedPieces(t *testing.T, p *Parser, pieces [][]byte) []rec {
	s := &aliasSink{t: t, p: p}
	for _, pc := range pieces {
		s.piece = pc
		p.Feed(pc, s)
		if len(p.buf) > p.maxLine() {
			t.Fatalf("buffer len %d exceeds MaxLine %d", len(p.buf), p.maxLine())
		}
		if cap(p.buf) <= p.maxLine() {
			checkBuf(t, p)
		}
	}
	s.piece = nil
	p.Close(s)
	return s.got
}

func eventPieces(in []byte) [][]byte {
	var pieces [][]byte
	for len(in) > 0 {
		i := bytes.Index(in, []byte("\n\n"))
		if i < 0 {
			break
		}
		pieces = append(pieces, in[:i+2])
		in = in[i+2:]
	}
	return append(pieces, in)
}

func checkFastPath(t *testing.T, data []byte, split, maxLine uint16) {
	s := &script{b: data}
	shape := s.n(nShapes)
	in := []byte(fastPathStream(s, shape))
	ml := int(maxLine % 1024)
	want := refChunks(in, ml)
	// A second, different stream fed to the same Parser without Reset, and
	// with another MaxLine: what is cached from the first one must not leak
	// into it.
	in2 := []byte(fastPathStream(&script{b: data[min(len(data), 3):]}, (shape+int(split>>15))%nShapes))
	ml2 := int(split>>8) % 300
	want2 := refChunks(in2, ml2)

	size := 1 + int(split)%300
	var fixed [][]byte
	for i := 0; i < len(in); i += size {
		fixed = append(fixed, in[i:min(i+size, len(in))])
	}
	cut := 0
	if len(in) > 0 {
		cut = int(split) % (len(in) + 1)
	}
	for _, v := range []struct {
		name   string
		pieces [][]byte
	}{
		{"whole", [][]byte{in}},
		{"events", eventPieces(in)},
		{"two", [][]byte{in[:cut], in[cut:]}},
		{"fixed", fixed},
	} {
		p := Parser{MaxLine: ml}
		got := feedPieces(t, &p, v.pieces)
		if !slices.Equal(got, want) {
			t.Fatalf("%s (shape %d, MaxLine %d): %s\nstream:\n%q", v.name, shape, ml, firstDiff(got, want), in)
		}
		malformed := 0
		for _, r := range want {
			if r.Malformed {
				malformed++
			}
		}
		if p.DataLines != len(want) || p.MalformedLines != malformed {
			t.Fatalf("%s: counters %+v, want %d data lines, %d malformed", v.name, countersOf(&p), len(want), malformed)
		}
		p.MaxLine = ml2
		got2 := feedPieces(t, &p, eventPieces(in2))
		if !slices.Equal(got2, want2) {
			t.Fatalf("%s, second stream: %s\nstream:\n%q", v.name, firstDiff(got2, want2), in2)
		}
	}
}

// FuzzParserFastPath checks that the Parser (with its cached prefix and
// tail) delivers exactly the chunks that ScanChunk gives for every payload,
// on streams built from realistic templates.
func FuzzParserFastPath(f *testing.F) {
	for shape := range nShapes {
		f.Add([]byte{byte(shape), 0, 0, 0, 0, 20, 1, 2, 30, 4, 5, 40, 6, 7, 50, 200, 201, 202, 14, 9}, uint16(shape*17), uint16(0))
		f.Add([]byte{byte(shape), 0xff, 1, 2, 3, 31, 3, 'a', 'b', 'c', 31, 3, '"', '\\', 'x', 31, 0, 7, 9, 1, 1, 0, 1, 3}, uint16(shape*31), uint16(200+shape))
	}
	f.Fuzz(checkFastPath)
}

// TestParserFastPathStreams runs the benchmark streams and fuzz-like
// streams through the Parser and compares with ScanChunk alone.
func TestParserFastPathStreams(t *testing.T) {
	for _, kind := range []string{"vllm-chat", "completions", "continuous-usage", "python-spaces"} {
		stream, payloads := benchStream(kind, 200)
		in := []byte(stream)
		want := refChunks(in, 0)
		if len(want) != len(payloads) {
			t.Fatalf("%s: %d reference chunks for %d payloads", kind, len(want), len(payloads))
		}
		for _, pieces := range [][][]byte{{in}, eventPieces(in)} {
			var p Parser
			if got := feedPieces(t, &p, pieces); !slices.Equal(got, want) {
				t.Fatalf("%s: %s", kind, firstDiff(got, want))
			}
		}
	}
	r := rand.New(rand.NewPCG(5, 6))
	for shape := range nShapes {
		for seed := range 300 {
			data := make([]byte, 1+r.IntN(600))
			for i := range data {
				data[i] = byte(r.Uint32())
			}
			if r.IntN(2) == 0 {
				// Mostly plain token chunks with short texts.
				for i := 1; i < len(data); i += 4 {
					data[i] = 31
				}
			}
			data[0] = byte(shape)
			checkFastPath(t, data, uint16(r.Uint32()), uint16(seed%3*150))
		}
	}
}

// TestParserFastPathEngaged checks that the caches fill on a realistic
// stream: the prefix after the first content chunk, the tail after the
// second one.
func TestParserFastPathEngaged(t *testing.T) {
	for _, kind := range []string{"vllm-chat", "completions", "continuous-usage", "python-spaces"} {
		_, payloads := benchStream(kind, 10)
		var p Parser
		var s countSink
		p.Feed([]byte("data: "+payloads[1]+"\n\n"), &s)
		if len(p.fast.line) == 0 {
			t.Fatalf("%s: no prefix cached", kind)
		}
		if !strings.HasSuffix(string(p.fast.line), `"content":"`) && !strings.HasSuffix(string(p.fast.line), `"text":"`) &&
			!strings.HasSuffix(string(p.fast.line), `"content": "`) {
			t.Fatalf("%s: cached prefix %q", kind, p.fast.line)
		}
		p.Feed([]byte("data: "+payloads[2]+"\n\n"), &s)
		if len(p.fast.tail) == 0 {
			t.Fatalf("%s: no tail cached", kind)
		}
		if kind == "continuous-usage" && p.fast.holes.n != 3 {
			t.Fatalf("%s: %d holes in the tail", kind, p.fast.holes.n)
		}
		for _, pl := range payloads[3:9] {
			p.Feed([]byte("data: "+pl+"\n\n"), &s)
			if p.fast.tailMiss != 0 {
				t.Fatalf("%s: the tail template did not match %s", kind, pl)
			}
		}
		p.Reset()
		if len(p.fast.line) != 0 || len(p.fast.tail) != 0 {
			t.Fatalf("%s: Reset kept the caches", kind)
		}
	}
}

// TestParserFastPathMaxLineLowered lowers MaxLine below the length of the
// cached line prefix: lines that start with it are then truncated before
// its end, and must be scanned as such.
func TestParserFastPathMaxLineLowered(t *testing.T) {
	stream, _ := benchStream("vllm-chat", 20)
	in := []byte(stream)
	var p Parser
	s := &aliasSink{t: t, p: &p}
	s.piece = in[:len(in)/2]
	p.Feed(s.piece, s) // caches the prefix and the tail
	p.Close(s)
	if len(p.fast.line) < 100 {
		t.Fatalf("cached line prefix %q", p.fast.line)
	}
	for _, ml := range []int{len(p.fast.line) - 1, len(p.fast.line), len(p.fast.line) + 1, 60} {
		p.MaxLine = ml
		s.got = nil
		s.piece = in
		p.Feed(in, s)
		p.Close(s)
		if want := refChunks(in, ml); !slices.Equal(s.got, want) {
			t.Fatalf("MaxLine %d: %s", ml, firstDiff(s.got, want))
		}
	}
}

// TestCloseQuote compares closeQuote (and so the loop scanTop inlines) with
// a plain loop, around the 8-byte boundaries.
func TestCloseQuote(t *testing.T) {
	ref := func(d []byte, s int) int {
		for j := s; j < len(d); j++ {
			switch d[j] {
			case '"':
				return j
			case '\\':
				j++
			}
		}
		return -1
	}
	r := rand.New(rand.NewPCG(9, 9))
	const alphabet = "\"\\\\ab\x00\xff"
	for range 200000 {
		d := make([]byte, r.IntN(40))
		for i := range d {
			d[i] = alphabet[r.IntN(len(alphabet))]
		}
		s := 0
		if len(d) > 0 {
			s = r.IntN(len(d) + 1)
		}
		if got, want := closeQuote(d, s), ref(d, s); got != want {
			t.Fatalf("closeQuote(%q, %d) = %d, want %d", d, s, got, want)
		}
		// The walker: a string value starting at s-1.
		doc := append([]byte(`{"id":"`), d[s:]...)
		c := ScanChunk(doc)
		if q := ref(d, s); q >= 0 && string(c.ID) != string(d[s:q]) {
			t.Fatalf("ScanChunk(%q).ID = %q, want %q", doc, c.ID, d[s:q])
		}
	}
}

// TestParserFastPathRecovers feeds chunks whose prefixes all differ, which
// makes the Parser stop caching resume points, then a uniform run: the fast
// path must engage again within 64 lines.
func TestParserFastPathRecovers(t *testing.T) {
	_, payloads := benchStream("vllm-chat", 200)
	var p Parser
	var s countSink
	for i, pl := range payloads[1:101] {
		pl = strings.Replace(pl, `"index":0`, `"index":`+strconv.Itoa(i), 1)
		p.Feed([]byte("data: "+pl+"\n\n"), &s)
	}
	if p.fast.retakes < 3 {
		t.Fatalf("%d resume points cached in a row", p.fast.retakes)
	}
	for i, pl := range payloads[101:190] {
		pl = strings.Replace(pl, `"index":0`, `"index":1000`, 1)
		p.Feed([]byte("data: "+pl+"\n\n"), &s)
		if i >= 70 && (p.fast.misses != 0 || p.fast.tailMiss != 0) {
			t.Fatalf("chunk %d of the uniform run: %d misses, %d tail misses", i, p.fast.misses, p.fast.tailMiss)
		}
	}
	if s.tokens != 189 {
		t.Fatalf("%d token chunks", s.tokens)
	}
}
