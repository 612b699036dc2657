package ssestream

import (
	"encoding/binary"
	"fmt"
	"strings"
	"testing"
)

func TestKeyWords(t *testing.T) {
	words := map[string][]uint64{
		"id":                 {kwID0},
		"model":              {kwModel0},
		"choices":            {kwChoices0},
		"usage":              {kwUsage0},
		"error":              {kwError0},
		"delta":              {kwDelta0},
		"message":            {kwMessage0},
		"text":               {kwText0},
		"finish_reason":      {kwFinishReason0, kwFinishReason1},
		"content":            {kwContent0},
		"reasoning":          {kwReasoning0, kwReasoning1},
		"reasoning_content":  {kwReasoning0, kwReasoningContent1, kwReasoningContent2},
		"refusal":            {kwRefusal0},
		"tool_calls":         {kwToolCalls0, kwToolCalls1},
		"prompt_tokens":      {kwPromptTokens0, kwPromptTokens1},
		"completion_tokens":  {kwCompletionTokens0, kwCompletionTokens1, kwCompletionTokens2},
		"object":             {kwObject0},
		"created":            {kwCreated0},
		"index":              {kwIndex0},
		"logprobs":           {kwLogprobs0, kwLogprobs1},
		"role":               {kwRole0},
		"stop_reason":        {kwStopReason0, kwStopReason1},
		"total_tokens":       {kwTotalTokens0, kwTotalTokens1},
		"system_fingerprint": {kwSystemFingerprint0, kwSystemFingerprint1, kwSystemFingerprint2},
	}
	for key, ws := range words {
		b := []byte(key + `"` + strings.Repeat("\x00", 24))
		for i, w := range ws {
			want := binary.LittleEndian.Uint64(b[8*i:])
			if w != want {
				t.Errorf("%s word %d = %#x, want %#x", key, i, w, want)
			}
		}
	}
}

// knownKeySpellings are the keys of the fast matcher plus near misses.
var knownKeySpellings = []string{
	"id", "model", "choices", "usage", "error", "delta", "message", "text",
	"finish_reason", "content", "reasoning", "reasoning_content", "refusal",
	"tool_calls", "prompt_tokens", "completion_tokens", "object", "created",
	"index", "logprobs", "role", "stop_reason", "total_tokens", "system_fingerprint",
	// near misses
	"i", "ids", "modelx", "choice", "choicesx", "contents", "conten", "Content",
	"reasoning_", "reasoning_contents", "reasoningX", "completion_token",
	"completion_tokensx", "finish_reasonx", "finish_reaso", "tool_callsx",
	"text_", "logprob", "prompt_tokens_details", "d", "",
}

// TestKeyMatcher puts every spelling in every context, both where the fast
// matcher applies (at least 16 bytes follow the key) and where it does not
// (the key is near the end), and compares with the reference.
func TestKeyMatcher(t *testing.T) {
	const pad = `"padding_padding_padding":0`
	for _, k := range knownKeySpellings {
		q := `"` + k + `"`
		docs := []string{
			fmt.Sprintf(`{%s:"v",%s:{"prompt_tokens":1,%s:7,%s},%s:[{%s:{%s:"x",%s:[1],%s},%s:"stop",%s}],%s}`,
				q, q, q, pad, q, q, q, q, pad, q, pad, pad),
			fmt.Sprintf(`{"choices":[{"delta":{%s:"x"},%s:"length"}],"usage":{%s:3},%s:"m"}`, q, q, q, q),
			fmt.Sprintf(`{"choices":[{"delta":{%s:"x"}}]}`, q),
			fmt.Sprintf(`{"choices":[{%s:"y"}]}`, q),
			fmt.Sprintf(`{"usage":{%s:9}}`, q),
			fmt.Sprintf(`{%s:"z"}`, q),
			fmt.Sprintf(`{%s :"z" , %s}`, q, pad),
		}
		for _, doc := range docs {
			want, ok := refScan([]byte(doc))
			if !ok {
				t.Fatalf("bad test doc %s", doc)
			}
			c := ScanChunk([]byte(doc))
			if got := toRec(&c); got != want {
				t.Errorf("ScanChunk(%s)\n got %v\nwant %v", doc, got, want)
			}
		}
	}
}
