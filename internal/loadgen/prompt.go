package loadgen

import (
	"math/rand/v2"
	"strings"
)

// fillerWords is the vocabulary of the generated prompts: plain English
// filler, about five characters a word with its space.
var fillerWords = [...]string{
	"the", "system", "report", "latency", "model", "token", "request", "batch",
	"server", "queue", "measure", "value", "review", "table", "figure", "data",
	"signal", "engine", "memory", "cache", "design", "result", "summary", "query",
	"answer", "detail", "section", "example", "number", "window", "process", "stream",
	"and", "of", "to", "in", "for", "with", "on", "by",
	"analysis", "context", "output", "input", "plan", "trace", "event", "order",
	"first", "second", "next", "last", "long", "short", "slow", "fast",
	"please", "explain", "describe", "compare", "list", "check", "find", "note",
}

// fillerPrompt returns a prompt of about tokens tokens (CharsPerToken
// characters each) for arrival index: deterministic from seed and index,
// different for each index, and never anybody's real text.
func fillerPrompt(seed uint64, index, tokens int) string {
	n := tokens * CharsPerToken
	if n <= 0 {
		return ""
	}
	r := rand.New(rand.NewPCG(seed^streamPrompt, uint64(index)))
	var b strings.Builder
	b.Grow(n + 16)
	for b.Len() < n {
		if b.Len() > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(fillerWords[r.IntN(len(fillerWords))])
	}
	return b.String()[:n]
}
