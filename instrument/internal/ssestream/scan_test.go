package ssestream

import (
	"fmt"
	"strings"
	"testing"
	"unsafe"
)

// rec is a comparable copy of a Chunk. Byte slices become strings; a nil
// slice is "" and a non-nil empty slice is emptyMark.
type rec struct {
	Done, Malformed, Truncated, Error bool
	Tokens                            int
	HasUsage                          bool
	Prompt, Completion                int
	Model, ID, Finish                 string
}

const emptyMark = "<empty>"

func bstr(b []byte) string {
	if b == nil {
		return ""
	}
	if len(b) == 0 {
		return emptyMark
	}
	return string(b)
}

func toRec(c *Chunk) rec {
	return rec{
		Done: c.Done, Malformed: c.Malformed, Truncated: c.Truncated, Error: c.Error,
		Tokens: c.Tokens, HasUsage: c.HasUsage,
		Prompt: c.PromptTokens, Completion: c.CompletionTokens,
		Model: bstr(c.Model), ID: bstr(c.ID), Finish: bstr(c.FinishReason),
	}
}

// recFields has rec's fields but not its String method.
type recFields rec

func (r rec) String() string { return fmt.Sprintf("%+v", recFields(r)) }

func TestScanChunk(t *testing.T) {
	deep := func(n int) string {
		return `{"x":` + strings.Repeat("[", n) + strings.Repeat("]", n) + `,"choices":[{"delta":{"content":"a"}}]}`
	}
	tests := []struct {
		name string
		in   string
		want rec
	}{
		{"role chunk",
			`{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"role":"assistant","content":""},"logprobs":null,"finish_reason":null}]}`,
			rec{Model: "m", ID: "chatcmpl-1"}},
		{"content chunk",
			`{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"content":" world"},"logprobs":null,"finish_reason":null}]}`,
			rec{Tokens: 1, Model: "m", ID: "chatcmpl-1"}},
		{"finish chunk",
			`{"id":"x","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}`,
			rec{ID: "x", Finish: "stop"}},
		{"usage only",
			`{"id":"x","choices":[],"usage":{"prompt_tokens":12,"completion_tokens":34,"total_tokens":46}}`,
			rec{ID: "x", HasUsage: true, Prompt: 12, Completion: 34}},
		{"vllm continuous usage",
			`{"id":"x","choices":[{"index":0,"delta":{"content":"a"}}],"usage":{"prompt_tokens":5,"completion_tokens":7,"total_tokens":12}}`,
			rec{ID: "x", Tokens: 1, HasUsage: true, Prompt: 5, Completion: 7}},
		{"usage null",
			`{"id":"x","choices":[{"index":0,"delta":{"content":"a"}}],"usage":null}`,
			rec{ID: "x", Tokens: 1}},
		{"usage empty object",
			`{"usage":{}}`,
			rec{}},
		{"usage only total",
			`{"usage":{"total_tokens":3}}`,
			rec{HasUsage: true}},
		{"usage with details",
			`{"usage":{"prompt_tokens":10,"total_tokens":15,"completion_tokens":5,"prompt_tokens_details":{"cached_tokens":2},"completion_tokens_details":null}}`,
			rec{HasUsage: true, Prompt: 10, Completion: 5}},
		{"usage odd numbers",
			`{"usage":{"prompt_tokens":-3,"completion_tokens":7.9}}`,
			rec{HasUsage: true, Completion: 7}},
		{"usage exponent and huge",
			`{"usage":{"prompt_tokens":1e3,"completion_tokens":123456789012345678901234567890}}`,
			rec{HasUsage: true, Prompt: 1, Completion: maxUsageValue}},
		{"usage non-numeric members",
			`{"usage":{"prompt_tokens":"12","completion_tokens":null}}`,
			rec{}},
		{"usage truncated number",
			`{"usage":{"prompt_tokens":12`,
			rec{Malformed: true}},
		{"usage number then truncated",
			`{"usage":{"prompt_tokens":12,"completion_tokens":3`,
			rec{Malformed: true, HasUsage: true, Prompt: 12}},
		{"text completion",
			`{"id":"cmpl-1","object":"text_completion","model":"m","choices":[{"index":0,"text":"hi","finish_reason":null}]}`,
			rec{ID: "cmpl-1", Model: "m", Tokens: 1}},
		{"text completion empty",
			`{"id":"cmpl-1","choices":[{"index":0,"text":"","finish_reason":"length"}]}`,
			rec{ID: "cmpl-1", Finish: "length"}},
		{"python spacing",
			`{"id": "x", "choices": [{"delta": {"content": "a"}}]}`,
			rec{ID: "x", Tokens: 1}},
		{"whitespace everywhere",
			" \t{ \"id\" : \"x\" ,\n \"choices\" : [ { \"delta\" : { \"content\" : \"a\" } } , { } ] , \"usage\" : null ,\r\n\"model\":\"m\" }\n",
			rec{ID: "x", Model: "m", Tokens: 1}},
		{"whitespace empty containers",
			`{ "choices" : [ ] , "usage" : { } , "x" : { "y" : [ ] } }`,
			rec{}},
		{"escaped key lookalike in value",
			`{"id":"x","choices":[{"delta":{"role":"\"content\":\"x\""}}]}`,
			rec{ID: "x"}},
		{"escaped key lookalike in id",
			`{"id":"x\"content\":\"y","choices":[]}`,
			rec{ID: `x\"content\":\"y`}},
		{"escaped backslash before quote",
			`{"id":"a\\","model":"m\\\\"}`,
			rec{ID: `a\\`, Model: `m\\\\`}},
		{"escaped quote then backslash",
			`{"id":"a\\\"b","model":"m"}`,
			rec{ID: `a\\\"b`, Model: "m"}},
		{"unicode escape content",
			`{"choices":[{"delta":{"content":"\u00e9"}}]}`,
			rec{Tokens: 1}},
		{"backslash-only content",
			`{"choices":[{"delta":{"content":"\\"}}]}`,
			rec{Tokens: 1}},
		{"utf8 content",
			`{"choices":[{"delta":{"content":"日本"}}]}`,
			rec{Tokens: 1}},
		{"content null",
			`{"choices":[{"delta":{"content":null}}]}`,
			rec{}},
		{"content non-string",
			`{"choices":[{"delta":{"content":["a"]}}]}`,
			rec{}},
		{"role only",
			`{"choices":[{"delta":{"role":"assistant"}}]}`,
			rec{}},
		{"reasoning_content",
			`{"choices":[{"delta":{"reasoning_content":"think"}}]}`,
			rec{Tokens: 1}},
		{"reasoning",
			`{"choices":[{"delta":{"content":null,"reasoning":"think"}}]}`,
			rec{Tokens: 1}},
		{"refusal",
			`{"choices":[{"delta":{"refusal":"no"}}]}`,
			rec{Tokens: 1}},
		{"refusal null",
			`{"choices":[{"delta":{"refusal":null,"content":""}}]}`,
			rec{}},
		{"tool_calls",
			`{"choices":[{"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\"a\":"}}]}}]}`,
			rec{Tokens: 1}},
		{"tool_calls empty",
			`{"choices":[{"delta":{"tool_calls":[ ]}}]}`,
			rec{}},
		{"tool_calls null",
			`{"choices":[{"delta":{"tool_calls":null}}]}`,
			rec{}},
		{"message content",
			`{"choices":[{"index":0,"message":{"role":"assistant","content":"full answer"},"finish_reason":"stop"}]}`,
			rec{Tokens: 1, Finish: "stop"}},
		{"logprobs content is not output",
			`{"choices":[{"index":0,"delta":{},"logprobs":{"content":[{"token":"a","logprob":-0.1}]}}]}`,
			rec{}},
		{"top-level content is not output",
			`{"content":"x","text":"y","delta":{"content":"z"}}`,
			rec{}},
		{"nested delta is not output",
			`{"choices":[{"x":{"delta":{"content":"z"}}}]}`,
			rec{}},
		{"choices not array",
			`{"choices":{"delta":{"content":"a"}}}`,
			rec{}},
		{"choices mixed elements",
			`{"choices":[1,"a",null,[{"text":"no"}],{"text":"b"}]}`,
			rec{Tokens: 1}},
		{"second choice has content",
			`{"choices":[{"index":0,"delta":{}},{"index":1,"delta":{"content":"x"}}]}`,
			rec{Tokens: 1}},
		{"first non-null finish reason",
			`{"choices":[{"index":0,"finish_reason":null},{"index":1,"finish_reason":""},{"index":2,"finish_reason":"length"},{"index":3,"finish_reason":"stop"}]}`,
			rec{Finish: "length"}},
		{"model not string",
			`{"model":123,"id":null}`,
			rec{}},
		{"model empty string",
			`{"model":""}`,
			rec{Model: emptyMark}},
		{"model last wins",
			`{"model":"a","model":"b"}`,
			rec{Model: "b"}},
		{"error object",
			`{"error":{"message":"boom","type":"server_error"}}`,
			rec{Error: true}},
		{"error string",
			`{"id":"x","error":"boom"}`,
			rec{ID: "x", Error: true}},
		{"error null",
			`{"id":"x","error":null,"choices":[]}`,
			rec{ID: "x"}},
		{"error truncated",
			`{"error":{"message":"bo`,
			rec{Error: true, Malformed: true}},
		{"done", `[DONE]`, rec{Done: true}},
		{"done spaces", " [DONE] \r", rec{Done: true}},
		{"done suffix", `[DONE]x`, rec{Malformed: true}},
		{"done lowercase", `[done]`, rec{Malformed: true}},
		{"empty", ``, rec{Malformed: true}},
		{"blank", " \t ", rec{Malformed: true}},
		{"not json", `not json`, rec{Malformed: true}},
		{"top-level array", `[{"choices":[]}]`, rec{Malformed: true}},
		{"top-level string", `"x"`, rec{Malformed: true}},
		{"empty object", `{}`, rec{}},
		{"empty object spaced", ` { } `, rec{}},
		{"two objects", `{}{}`, rec{Malformed: true}},
		{"trailing garbage", `{"id":"x"} x`, rec{Malformed: true, ID: "x"}},
		{"truncated content",
			`{"id":"x","choices":[{"delta":{"content":"a`,
			rec{ID: "x", Tokens: 1, Malformed: true}},
		{"truncated empty content",
			`{"id":"x","choices":[{"delta":{"content":"`,
			rec{ID: "x", Malformed: true}},
		{"truncated after content",
			`{"id":"x","choices":[{"delta":{"content":"a"}}`,
			rec{ID: "x", Tokens: 1, Malformed: true}},
		{"truncated id",
			`{"id":"xy`,
			rec{Malformed: true}},
		{"truncated finish",
			`{"choices":[{"finish_reason":"st`,
			rec{Malformed: true}},
		{"truncated tool_calls",
			`{"choices":[{"delta":{"tool_calls":[{"ind`,
			rec{Malformed: true, Tokens: 1}},
		{"trailing comma object", `{"a":1,}`, rec{Malformed: true}},
		{"trailing comma array", `{"a":[1,]}`, rec{Malformed: true}},
		{"trailing comma choices", `{"choices":[{},]}`, rec{Malformed: true}},
		{"missing colon", `{"a" 1}`, rec{Malformed: true}},
		{"missing comma", `{"a":1 "b":2}`, rec{Malformed: true}},
		{"leading comma", `{,"a":1}`, rec{Malformed: true}},
		{"leading zero", `{"a":01}`, rec{Malformed: true}},
		{"bad literal", `{"a":tru}`, rec{Malformed: true}},
		{"bad literal suffix", `{"a":truex}`, rec{Malformed: true}},
		{"lone minus", `{"a":-}`, rec{Malformed: true}},
		{"bare fraction", `{"a":1.}`, rec{Malformed: true}},
		{"bare exponent", `{"a":1e}`, rec{Malformed: true}},
		{"plus sign", `{"a":+1}`, rec{Malformed: true}},
		{"mismatched bracket", `{"a":{"b":1]}`, rec{Malformed: true}},
		{"mismatched bracket 2", `{"a":[1}}`, rec{Malformed: true}},
		{"unterminated array", `{"a":[1`, rec{Malformed: true}},
		{"unterminated string", `{"a":"x}`, rec{Malformed: true}},
		{"non-string key", `{1:2}`, rec{Malformed: true}},
		{"non-string key nested", `{"a":{1:2}}`, rec{Malformed: true}},
		{"valid scalars", `{"a":[true,false,null,-0.5e+3,0,"s",{"b":[]}],"c":1E-2}`, rec{}},
		{"deep nesting ok", deep(200), rec{Tokens: 1}},
		{"deep nesting too deep", deep(300), rec{Malformed: true}},
		{"deep unclosed", `{"x":` + strings.Repeat("[", 10000), rec{Malformed: true}},
		{"deep objects", `{"x":` + strings.Repeat(`{"a":`, 100) + "1" + strings.Repeat("}", 100) + `}`, rec{}},
		{"unknown shape", `{"type":"content_block_delta","delta":{"text":"x"}}`, rec{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := ScanChunk([]byte(tt.in))
			if got := toRec(&c); got != tt.want {
				t.Errorf("ScanChunk(%.80q)\n got %v\nwant %v", tt.in, got, tt.want)
			}
		})
	}
}

// TestScanChunkAliases checks that returned slices point into the input.
func TestScanChunkAliases(t *testing.T) {
	in := []byte(`{"id":"abc","model":"m1","choices":[{"finish_reason":"stop"}]}`)
	c := ScanChunk(in)
	lo := uintptr(unsafe.Pointer(&in[0]))
	hi := lo + uintptr(len(in))
	for name, b := range map[string][]byte{"ID": c.ID, "Model": c.Model, "FinishReason": c.FinishReason} {
		if len(b) == 0 {
			t.Fatalf("%s empty", name)
		}
		if p := uintptr(unsafe.Pointer(&b[0])); p < lo || p >= hi {
			t.Errorf("%s does not alias the input", name)
		}
	}
}

func TestScanChunkAllocs(t *testing.T) {
	for _, in := range [][]byte{
		[]byte(benchChunk),
		[]byte(`{"id":"x","choices":[],"usage":{"prompt_tokens":12,"completion_tokens":34,"total_tokens":46}}`),
		[]byte(`{"error":{"message":"boom"}}`),
		[]byte(`[DONE]`),
		[]byte(`{"x":` + strings.Repeat("[", 100) + strings.Repeat("]", 100) + `}`),
		[]byte(`{"id":"x","choices":[{"delta":{"content":"a`),
	} {
		var sink Chunk
		if n := testing.AllocsPerRun(1000, func() { sink = ScanChunk(in) }); n != 0 {
			t.Errorf("ScanChunk(%.40q): %v allocs/op, want 0", in, n)
		}
		_ = sink
	}
}

func TestIntPart(t *testing.T) {
	for in, want := range map[string]int{
		"0": 0, "7": 7, "12": 12, "-5": 0, "-0": 0, "3.9": 3, "1e3": 1, "2E+2": 2,
		"2147483646": 2147483646, "2147483647": 2147483647, "2147483648": maxUsageValue,
		"214748364": 214748364, "2147483650": maxUsageValue, "99999999999": maxUsageValue,
		"123456789012345678901234567890": maxUsageValue,
	} {
		if got := intPart([]byte(in)); got != want {
			t.Errorf("intPart(%s) = %d, want %d", in, got, want)
		}
	}
}
