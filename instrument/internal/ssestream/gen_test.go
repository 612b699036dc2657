package ssestream

import (
	"bytes"
	"math/rand/v2"
	"strconv"
	"testing"
)

// jsonGen produces random valid JSON objects shaped like (and unlike)
// OpenAI-compatible chunks, with random whitespace, escapes and duplicates.
type jsonGen struct {
	r *rand.Rand
	b bytes.Buffer
}

var genKeys = map[uint8][]string{
	cTop:    {"id", "model", "choices", "usage", "error", "object", "created", "system_fingerprint", "x"},
	cChoice: {"index", "delta", "message", "text", "finish_reason", "logprobs", "stop_reason"},
	cDelta:  {"role", "content", "reasoning_content", "reasoning", "refusal", "tool_calls", "x"},
	cUsage:  {"prompt_tokens", "completion_tokens", "total_tokens", "prompt_tokens_details"},
	cSkip:   {"content", "text", "delta", "choices", "a", "id", "finish_reason"},
}

func (g *jsonGen) ws() {
	if g.r.IntN(4) == 0 {
		g.b.WriteString([]string{" ", "\n", "\t", "\r\n  ", "  "}[g.r.IntN(5)])
	}
}

func (g *jsonGen) str() {
	g.b.WriteByte('"')
	for range g.r.IntN(4) {
		switch g.r.IntN(8) {
		case 0:
			g.b.WriteString(`\"`)
		case 1:
			g.b.WriteString(`\\`)
		case 2:
			g.b.WriteString(`\u00e9`)
		case 3:
			g.b.WriteString(`\"content\":\"x`)
		case 4:
			g.b.WriteString("é")
		default:
			g.b.WriteString([]string{"a", "stop", " world", "{", "]", ":", ","}[g.r.IntN(7)])
		}
	}
	g.b.WriteByte('"')
}

func (g *jsonGen) num() {
	switch g.r.IntN(6) {
	case 0:
		g.b.WriteString("-" + strconv.Itoa(g.r.IntN(100)))
	case 1:
		g.b.WriteString(strconv.Itoa(g.r.IntN(100)) + ".5")
	case 2:
		g.b.WriteString("1e3")
	case 3:
		g.b.WriteString("99999999999999999999")
	default:
		g.b.WriteString(strconv.Itoa(g.r.IntN(100000)))
	}
}

// value writes a value; ctx is the context the value would create if it is
// an object (or the choices array for cChoices).
func (g *jsonGen) value(ctx uint8, depth int) {
	if depth > 6 {
		g.b.WriteString("null")
		return
	}
	switch g.r.IntN(10) {
	case 0:
		g.b.WriteString([]string{"null", "true", "false"}[g.r.IntN(3)])
	case 1, 2:
		g.num()
	case 3, 4:
		g.str()
	case 5, 6:
		g.array(ctx, depth)
	default:
		g.object(ctx, depth)
	}
}

func (g *jsonGen) array(ctx uint8, depth int) {
	g.b.WriteByte('[')
	g.ws()
	n := g.r.IntN(4)
	for i := range n {
		if i > 0 {
			g.b.WriteByte(',')
			g.ws()
		}
		if ctx == cChoices {
			g.object(cChoice, depth+1)
		} else {
			g.value(cSkip, depth+1)
		}
		g.ws()
	}
	g.b.WriteByte(']')
}

func (g *jsonGen) object(ctx uint8, depth int) {
	g.b.WriteByte('{')
	g.ws()
	keys := genKeys[ctx]
	if keys == nil {
		keys = genKeys[cSkip]
	}
	n := g.r.IntN(6)
	for i := range n {
		if i > 0 {
			g.b.WriteByte(',')
			g.ws()
		}
		k := keys[g.r.IntN(len(keys))]
		g.b.WriteString(`"` + k + `"`)
		g.ws()
		g.b.WriteByte(':')
		g.ws()
		next := uint8(cSkip)
		switch {
		case ctx == cTop && k == "choices":
			next = cChoices
		case ctx == cTop && k == "usage":
			next = cUsage
		case ctx == cChoice && (k == "delta" || k == "message"):
			next = cDelta
		}
		// Bias towards the expected value types.
		switch {
		case next == cChoices && g.r.IntN(3) > 0:
			g.array(cChoices, depth+1)
		case next != cSkip && g.r.IntN(3) > 0:
			g.object(next, depth+1)
		case ctx == cUsage && g.r.IntN(3) > 0:
			g.num()
		case (ctx == cDelta || ctx == cChoice || ctx == cTop) && g.r.IntN(2) > 0:
			g.str()
		default:
			g.value(next, depth+1)
		}
		g.ws()
	}
	g.b.WriteByte('}')
}

func TestScanChunkGenerated(t *testing.T) {
	g := &jsonGen{r: rand.New(rand.NewPCG(2024, 11))}
	n := 5000
	if testing.Short() {
		n = 1000
	}
	var tokens, usage, finish int
	for range n {
		g.b.Reset()
		g.ws()
		g.object(cTop, 0)
		g.ws()
		doc := bytes.Clone(g.b.Bytes())
		want, ok := refScan(doc)
		if !ok {
			t.Fatalf("generator produced invalid JSON: %s", doc)
		}
		full := ScanChunk(doc)
		if got := toRec(&full); got != want {
			t.Fatalf("ScanChunk(%s)\n got %v\nwant %v", doc, got, want)
		}
		tokens += full.Tokens
		if full.HasUsage {
			usage++
		}
		if full.FinishReason != nil {
			finish++
		}
		// Every proper prefix is malformed, and what it reports is
		// consistent with the full document.
		for cut := range len(doc) {
			p := doc[:cut]
			c := ScanChunk(p)
			if len(bytes.Trim(doc[cut:], " \t\r\n")) > 0 && !c.Malformed {
				t.Fatalf("prefix %q of %s not Malformed", p, doc)
			}
			if c.Tokens > full.Tokens || (c.Error && !full.Error) || (c.HasUsage && !full.HasUsage) ||
				(c.FinishReason != nil && string(c.FinishReason) != string(full.FinishReason)) {
				t.Fatalf("prefix %q of %s reports %v, full %v", p, doc, toRec(&c), toRec(&full))
			}
		}
	}
	// Make sure the generator exercises the interesting paths.
	if tokens < n/20 || usage < n/50 || finish < n/50 {
		t.Fatalf("weak generator: tokens %d usage %d finish %d of %d", tokens, usage, finish, n)
	}
	t.Logf("%d docs: %d with tokens, %d with usage, %d with finish_reason", n, tokens, usage, finish)
}
