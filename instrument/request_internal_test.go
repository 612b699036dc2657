package instrument

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"unicode/utf8"
)

// refParseRequestBody is the straightforward decoder that parseRequestBody
// replaced: every message decoded twice and every text decoded into a Go
// string to count its runes. The in-place counting must agree with it.
func refParseRequestBody(buf []byte, info *RequestInfo) {
	var rb struct {
		Model               string            `json:"model"`
		Stream              bool              `json:"stream"`
		MaxTokens           int               `json:"max_tokens"`
		MaxCompletionTokens int               `json:"max_completion_tokens"`
		Messages            []json.RawMessage `json:"messages"`
		Prompt              json.RawMessage   `json:"prompt"`
		StreamOptions       *struct {
			IncludeUsage bool `json:"include_usage"`
		} `json:"stream_options"`
	}
	if json.Unmarshal(buf, &rb) != nil {
		return
	}
	info.Model = rb.Model
	info.Stream = rb.Stream
	info.MaxTokens = rb.MaxTokens
	if rb.MaxCompletionTokens > 0 {
		info.MaxTokens = rb.MaxCompletionTokens
	}
	info.IncludeUsage = rb.StreamOptions != nil && rb.StreamOptions.IncludeUsage
	info.Messages = len(rb.Messages)
	for _, m := range rb.Messages {
		var msg struct {
			Content json.RawMessage `json:"content"`
		}
		if json.Unmarshal(m, &msg) == nil {
			info.PromptChars += refTextChars(msg.Content)
		}
	}
	info.PromptChars += refTextChars(rb.Prompt)
}

func refTextChars(v json.RawMessage) int {
	v = bytes.TrimSpace(v)
	if len(v) == 0 {
		return 0
	}
	switch v[0] {
	case '"':
		var s string
		if json.Unmarshal(v, &s) == nil {
			return utf8.RuneCountInString(s)
		}
	case '[':
		var parts []json.RawMessage
		if json.Unmarshal(v, &parts) != nil {
			return 0
		}
		n := 0
		for _, p := range parts {
			n += refTextChars(p)
		}
		return n
	case '{':
		var part struct {
			Text json.RawMessage `json:"text"`
		}
		if json.Unmarshal(v, &part) == nil {
			return refTextChars(part.Text)
		}
	}
	return 0
}

var promptCharCases = []struct {
	name  string
	value string // a JSON value: a message content or a prompt
	chars int
}{
	{"ascii", `"Say hello in four words."`, 24},
	{"empty", `""`, 0},
	{"short escapes", `"a\nb\"c\\d\/e\tf\u0000"`, 12},
	{"unicode escape", `"caf\u00e9 \u00E9t\u00e9"`, 8},
	{"raw utf-8", `"héllo 😀 世界"`, 10},
	{"surrogate pair", `"\ud83d\ude00!"`, 2},
	{"lone high surrogate", `"\ud83d"`, 1},
	{"high surrogate then letter", `"\ud83dx"`, 2},
	{"high surrogate then escaped letter", `"\ud83d\u0041"`, 2},
	{"low before high", `"\ude00\ud83d"`, 2},
	{"two high surrogates", `"\ud83d\ud83d\ude00"`, 2},
	{"invalid utf-8 bytes", "\"a\xff\xfeb\xe2\x82\"", 6}, // a, U+FFFD ×2, b, U+FFFD ×2 (a cut sequence: one per byte)
	{"string array", `["ab", "c\u00e9", 7, null]`, 4},
	{"token ids", `[1, 2, 3]`, 0},
	{"content parts", `[{"type":"text","text":"hello"},{"type":"image_url","image_url":{"url":"http://x/\"y\"","text":"zzz"}},{"type":"text","text":"a\u00e9"}]`, 7},
	{"part key case", `[{"type":"text","TEXT":"abc"}]`, 3},
	{"part key escaped", `[{"type":"text","t\u0065xt":"abcd"}]`, 4},
	{"part duplicate key", `[{"text":"abcdef","type":"text","Text":"ab"}]`, 2},
	{"part text not a string", `[{"type":"text","text":42}]`, 0},
	{"nested arrays", `[["ab",["c"]],{"text":["de"]}]`, 5},
	{"whitespace", " \n\t[ { \"text\" : \"abc\" } , \"d\" ]\r\n", 4},
	{"null", `null`, 0},
	{"number", `12345`, 0},
	{"object without text", `{"type":"image"}`, 0},
	{"key looking like text", `{"textual":"abcdef","ttext":"x","tex":"y"}`, 0},
	{"text inside a nested value", `{"other":{"text":"abcdef"},"text":"ab"}`, 2},
	{"brackets inside strings", `[{"text":"]}{[\"\\"},"x]"]`, 8},
}

func TestPromptChars(t *testing.T) {
	for _, c := range promptCharCases {
		t.Run(c.name, func(t *testing.T) {
			if !json.Valid([]byte(c.value)) {
				t.Fatalf("case is not valid JSON: %s", c.value)
			}
			if got := textChars([]byte(c.value)); got != c.chars {
				t.Errorf("textChars = %d, want %d", got, c.chars)
			}
			if got := refTextChars(json.RawMessage(c.value)); got != c.chars {
				t.Errorf("reference decoder counts %d, want %d (bad case)", got, c.chars)
			}
			// As a message content and as a prompt.
			for _, body := range []string{
				`{"model":"m","messages":[{"role":"user","content":` + c.value + `}]}`,
				`{"model":"m","prompt":` + c.value + `}`,
			} {
				var info RequestInfo
				parseRequestBody([]byte(body), &info)
				if info.PromptChars != c.chars || info.Model != "m" {
					t.Errorf("%s: PromptChars %d, model %q; want %d, m", body, info.PromptChars, info.Model, c.chars)
				}
			}
		})
	}
}

var requestBodyCases = []string{
	`{"model":"meta-llama/Llama-3.1-8B-Instruct","stream":true,"stream_options":{"include_usage":true},"max_tokens":1024,"messages":[{"role":"system","content":"Be brief."},{"role":"user","content":[{"type":"text","text":"Hi \u00e9 😀"}]}]}`,
	`{"model":"m","messages":["hi",null,3,[],{"content":"abc"},{"Content":"de"},{"content":"x","content":"yz"}]}`,
	`{"model":"m","messages":{"content":"abc"}}`,
	`{"model":"m","messages":"abc"}`,
	`{"model":"m","messages":null,"prompt":null}`,
	`{"model":"m","messages":[{"content":"a"}],"messages":[{"content":"bcd"},{}]}`,
	`{"model":"m","prompt":["ab","cd"],"prompt":"xyz"}`,
	`{"model":"m","max_tokens":10,"max_completion_tokens":20}`,
	`{"model":"m","max_tokens":1.5,"messages":[{"content":"abc"}]}`,
	`{"model":"m","stream_options":null,"stream":false}`,
	`{"model":"m","stream_options":{"include_usage":"yes"}}`,
	`{"Model":"M","STREAM":true,"Messages":[{"CONTENT":"abc"}]}`,
	`{"model":"m","messages":[{"content":"abc"}]`,
	`{"model":"m","messages":[{"content":"abc"}]} trailing`,
	`[1,2]`,
	`null`,
	``,
	"{\"model\":\"m\",\"messages\":[{\"content\":\"a\xffb\"}]}",
	`{"model":"m","prompt":[[1,2],[3]]}`,
	`{"model":"m","messages":[{"content":[{"type":"text","text":"a"},{"type":"input_audio","input_audio":{"data":"AAAA"}}]}]}`,
	// What the fast path hands to json.Unmarshal.
	`{"MODEL":"M","model":"m2"}`,
	`{"mod\u0065l":"m","stream":true}`,
	`{"model":"a\"b\u00e9","stream":true}`,
	`{"model":null,"model":"x","model":null}`,
	`{"model":5}`,
	`{"max_tokens":"5"}`,
	`{"max_tokens":1e3}`,
	`{"max_tokens":-7,"max_completion_tokens":null}`,
	`{"max_tokens":12345678901234567890}`,
	`{"max_tokens":123456789012345678}`,
	`{"max_tokens":1234567890123456789}`,
	`{"stream":"true"}`,
	`{"stream":true,"stream":null}`,
	`{"stream_options":{"include_usage":true},"stream_options":null}`,
	`{"stream_options":{"include_usage":true},"stream_options":{}}`,
	`{"stream_options":{"INCLUDE_USAGE":true}}`,
	`{"stream_options":{"include_usage":1}}`,
	`{"stream_options":[]}`,
	`{"ſtream":true}`,
	"{\"\u017ftream\":true,\"max_to\u212aens\":3}",
	`{"ma\u0078_tokens":3}`,
	`{"messages":[{"cont\u0065nt":"abc","CoNtEnT":"de"}],"PROMPT":"xyz"}`,
	`{"messages":[],"messages":null}`,
	`{"messages":[{"content":"ab"}],"messages":{}}`,
	` {"model" : "m" , "stream" : true , "messages" : [ { "content" : "abc" } ] } `,
	`{}`,
	"{\"model\":\"\xb1\"}",
	`{"other":{"model":"x","messages":[1]},"model":"m"}`,
}

func TestParseRequestBodyMatchesReference(t *testing.T) {
	for _, body := range requestBodyCases {
		var got, want RequestInfo
		parseRequestBody([]byte(body), &got)
		refParseRequestBody([]byte(body), &want)
		if got != want {
			t.Errorf("%s:\n got %+v\nwant %+v", body, got, want)
		}
	}
}

func FuzzParseRequestBody(f *testing.F) {
	for _, body := range requestBodyCases {
		f.Add([]byte(body))
	}
	for _, c := range promptCharCases {
		f.Add([]byte(`{"messages":[{"content":` + c.value + `}],"prompt":` + c.value + `}`))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		var got, want RequestInfo
		parseRequestBody(body, &got)
		refParseRequestBody(body, &want)
		if got != want {
			t.Errorf("%q:\n got %+v\nwant %+v", body, got, want)
		}
		textChars(body) // never panics, whatever the input
	})
}

// oneByteReader returns at most one byte per Read, like a slow network.
type oneByteReader struct{ r io.Reader }

func (o oneByteReader) Read(p []byte) (int, error) { return o.r.Read(p[:min(len(p), 1)]) }

func TestReadRequestInfoBodyIsReplayedWhole(t *testing.T) {
	body := `{"model":"m","stream":true,"messages":[{"role":"user","content":"abc"}]}`
	for _, c := range []struct {
		name   string
		length int64 // declared ContentLength
		limit  int64
		parsed bool
	}{
		{"exact length", int64(len(body)), 1 << 20, true},
		{"unknown length", -1, 1 << 20, true},
		{"zero length (client: unknown)", 0, 1 << 20, true},
		{"understated length", 10, 1 << 20, true},
		{"overstated length", 1000, 1 << 20, true},
		{"over the limit, known", int64(len(body)), 20, false},
		{"over the limit, unknown", -1, 20, false},
		{"limit is the size", int64(len(body)), int64(len(body)), true},
		{"limit one short", -1, int64(len(body)) - 1, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := httptest.NewRequest(http.MethodPost, "/v1/chat/completions", nil)
			r.Body = io.NopCloser(oneByteReader{strings.NewReader(body)})
			r.ContentLength = c.length
			info := readRequestInfo(r, &r.Body, c.limit, new(bufferedBody))
			if parsed := info.Model == "m"; parsed != c.parsed {
				t.Errorf("parsed = %v, want %v (%+v)", parsed, c.parsed, info)
			}
			if c.parsed && (info.PromptChars != 3 || info.Messages != 1 || !info.Stream) {
				t.Errorf("info %+v", info)
			}
			got, err := io.ReadAll(r.Body)
			if err != nil || string(got) != body {
				t.Errorf("body replayed as %q, %v", got, err)
			}
		})
	}
}

func BenchmarkParseRequestBody(b *testing.B) {
	body := []byte(`{"model":"meta-llama/Llama-3.1-8B-Instruct","stream":true,"stream_options":{"include_usage":true},"max_tokens":1024,"temperature":0.7,"messages":[` +
		`{"role":"system","content":"You are a concise assistant for an internal engineering wiki. Answer in plain English, cite the page titles you used, and say so when you do not know."},` +
		`{"role":"user","content":"Summarise the on-call runbook for the inference gateway: how to tell a slow engine from a slow client, which dashboards to open first, and when to page the model-serving team. Keep it under a thousand tokens."}]}`)
	for _, bc := range []struct {
		name  string
		parse func([]byte, *RequestInfo)
	}{{"in-place", parseRequestBody}, {"reference", refParseRequestBody}} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				var info RequestInfo
				bc.parse(body, &info)
			}
		})
	}
}
