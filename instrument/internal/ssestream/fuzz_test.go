package ssestream

import (
	"bytes"
	"encoding/json"
	"slices"
	"strings"
	"testing"
)

// fuzzSeeds are shared by both fuzz targets (in addition to testdata/fuzz).
var fuzzSeeds = []string{
	`{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"role":"assistant","content":""},"logprobs":null,"finish_reason":null}]}`,
	`{"id":"x","choices":[],"usage":{"prompt_tokens":12,"completion_tokens":34,"total_tokens":46}}`,
	`{"id": "x", "choices": [{"delta": {"content": "a\"\\\u00e9"}, "finish_reason": "stop"}]}`,
	`{"choices":[{"delta":{"tool_calls":[{"index":0,"function":{"name":"f","arguments":"{\"a\":1}"}}]}}]}`,
	`{"error":{"message":"boom","type":"server_error"}}`,
	`{"id":"cmpl-1","object":"text_completion","choices":[{"text":"hi","finish_reason":null}]}`,
	`{"choices":[{"message":{"content":"x"},"logprobs":{"content":[{"token":"a"}]}}]}`,
	`{"x":[[[{"a":[1,-2.5e3,true,false,null]}]]]}`,
	`{"id":"x","choices":[{"delta":{"content":"a`,
	`[DONE]`,
	`not json`,
}

// refScan is an independent reference for ScanChunk built on encoding/json.
// ok is false when d is not a valid JSON object (no comparison possible).
func refScan(d []byte) (r rec, ok bool) {
	t := bytes.Trim(d, " \t\r\n") // JSON whitespace only (not \v, \f, U+0085...)
	if string(t) == "[DONE]" {
		return rec{Done: true}, true
	}
	if !json.Valid(t) || len(t) == 0 || t[0] != '{' {
		return rec{}, false
	}
	var model, id, finish []byte
	eachMember(t, func(k string, v []byte) {
		switch k {
		case "id":
			if v[0] == '"' {
				id = v[1 : len(v)-1]
			}
		case "model":
			if v[0] == '"' {
				model = v[1 : len(v)-1]
			}
		case "error":
			if string(v) != "null" {
				r.Error = true
			}
		case "choices":
			eachElement(v, func(e []byte) {
				eachMember(e, func(k string, v []byte) {
					switch k {
					case "delta", "message":
						eachMember(v, func(k string, v []byte) {
							switch k {
							case "content", "reasoning_content", "reasoning", "refusal":
								if len(v) > 2 && v[0] == '"' {
									r.Tokens = 1
								}
							case "tool_calls":
								n := 0
								eachElement(v, func([]byte) { n++ })
								if n > 0 {
									r.Tokens = 1
								}
							}
						})
					case "text":
						if len(v) > 2 && v[0] == '"' {
							r.Tokens = 1
						}
					case "finish_reason":
						if len(v) > 2 && v[0] == '"' && finish == nil {
							finish = v[1 : len(v)-1]
						}
					}
				})
			})
		case "usage":
			eachMember(v, func(k string, v []byte) {
				if v[0] != '-' && (v[0] < '0' || v[0] > '9') {
					return
				}
				r.HasUsage = true
				switch k {
				case "prompt_tokens":
					r.Prompt = refInt(string(v))
				case "completion_tokens":
					r.Completion = refInt(string(v))
				}
			})
		}
	})
	r.Model, r.ID, r.Finish = bstr(model), bstr(id), bstr(finish)
	return r, true
}

func refInt(s string) int {
	if strings.HasPrefix(s, "-") {
		return 0
	}
	v := 0
	for _, ch := range s {
		if ch < '0' || ch > '9' {
			break
		}
		if v >= maxUsageValue/10 {
			// Compute in int64 so that the reference cannot overflow.
			if w := int64(v)*10 + int64(ch-'0'); w > maxUsageValue {
				return maxUsageValue
			}
		}
		v = v*10 + int(ch-'0')
	}
	return v
}

// eachMember calls f for every member of the object v in document order
// (duplicates included), with the raw value. Non-objects are ignored.
func eachMember(v []byte, f func(k string, v []byte)) {
	if len(v) == 0 || v[0] != '{' {
		return
	}
	dec := json.NewDecoder(bytes.NewReader(v))
	if _, err := dec.Token(); err != nil {
		panic(err)
	}
	for dec.More() {
		tk, err := dec.Token()
		if err != nil {
			panic(err)
		}
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			panic(err)
		}
		f(tk.(string), bytes.TrimSpace(raw))
	}
}

// eachElement calls f for every element of the array v. Non-arrays are
// ignored.
func eachElement(v []byte, f func(e []byte)) {
	if len(v) == 0 || v[0] != '[' {
		return
	}
	dec := json.NewDecoder(bytes.NewReader(v))
	if _, err := dec.Token(); err != nil {
		panic(err)
	}
	for dec.More() {
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			panic(err)
		}
		f(bytes.TrimSpace(raw))
	}
}

// nesting returns the maximum bracket nesting of d, ignoring strings.
func nesting(d []byte) int {
	depth, maxd, inStr := 0, 0, false
	for i := 0; i < len(d); i++ {
		switch c := d[i]; {
		case inStr && c == '\\':
			i++
		case c == '"':
			inStr = !inStr
		case inStr:
		case c == '{' || c == '[':
			depth++
			maxd = max(maxd, depth)
		case c == '}' || c == ']':
			depth--
		}
	}
	return maxd
}

// lenient reports input the scanner accepts although it is not JSON: string
// contents are not validated (control bytes, escapes).
func lenient(d []byte) bool {
	if bytes.IndexByte(d, '\\') >= 0 {
		return true
	}
	for _, c := range d {
		if c < 0x20 {
			return true
		}
	}
	return false
}

func checkScan(t *testing.T, data []byte) {
	c := ScanChunk(data)
	got := toRec(&c)
	if again := ScanChunk(data); toRec(&again) != got {
		t.Fatalf("rescan differs:\n%v\n%v", got, toRec(&again))
	}
	if c.Truncated {
		t.Fatalf("ScanChunk set Truncated")
	}
	if c.Done {
		if got != (rec{Done: true}) || string(bytes.Trim(data, " \t\r\n")) != "[DONE]" {
			t.Fatalf("bad Done chunk %v for %q", got, data)
		}
	}
	if c.Tokens != 0 && c.Tokens != 1 {
		t.Fatalf("Tokens %d", c.Tokens)
	}
	for _, b := range [][]byte{c.Model, c.ID, c.FinishReason} {
		if b != nil && !bytes.Contains(data, b) {
			t.Fatalf("field %q is not part of the input", b)
		}
	}
	if c.PromptTokens < 0 || c.CompletionTokens < 0 || c.PromptTokens > maxUsageValue || c.CompletionTokens > maxUsageValue {
		t.Fatalf("usage out of range: %v", got)
	}
	if !c.HasUsage && (c.PromptTokens != 0 || c.CompletionTokens != 0) {
		t.Fatalf("usage numbers without HasUsage: %v", got)
	}
	want, ok := refScan(data)
	switch {
	case ok && nesting(data) < maxDepth:
		if got != want {
			t.Fatalf("ScanChunk(%q)\n got %v\nwant %v (encoding/json reference)", data, got, want)
		}
	case !ok && !c.Malformed && !lenient(data):
		t.Fatalf("ScanChunk(%q) accepted input that encoding/json rejects: %v", data, got)
	}
}

func FuzzScanChunk(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(checkScan)
}

// TestScanChunkReference runs the fuzz checks (including the encoding/json
// differential) over the table inputs and the realistic stream.
func TestScanChunkReference(t *testing.T) {
	inputs := slices.Clone(fuzzSeeds)
	_, payloads := realisticStream(5)
	inputs = append(inputs, payloads...)
	for _, in := range inputs {
		checkScan(t, []byte(in))
	}
}

// parseAll feeds data to a fresh Parser in the given pieces and returns the
// chunks and counters.
func parseAll(t *testing.T, maxLine int, pieces ...[]byte) ([]rec, counters) {
	p := Parser{MaxLine: maxLine}
	var s recSink
	for _, pc := range pieces {
		p.Feed(pc, &s)
		checkBuf(t, &p)
	}
	p.Close(&s)
	return s.got, countersOf(&p)
}

func FuzzParser(f *testing.F) {
	for i, s := range fuzzSeeds {
		f.Add([]byte("data: "+s+"\n\n: c\r\ndata:"+s+"\r\n"), uint16(i*7), uint16(0))
		f.Add([]byte("event: x\ndata: "+s), uint16(i*13), uint16(20+i))
	}
	f.Fuzz(func(t *testing.T, data []byte, split, maxLine uint16) {
		ml := int(maxLine % 512) // 0 means DefaultMaxLine
		cut := 0
		if len(data) > 0 {
			cut = int(split) % (len(data) + 1)
		}
		whole, wc := parseAll(t, ml, data)
		two, tc := parseAll(t, ml, data[:cut], data[cut:])
		if !slices.Equal(whole, two) || wc != tc {
			t.Fatalf("split at %d changes the result:\nwhole %v %+v\nsplit %v %+v", cut, whole, wc, two, tc)
		}
		// Three pieces, each split point derived from the first.
		c2 := cut + (len(data)-cut)/2
		three, hc := parseAll(t, ml, data[:cut], data[cut:c2], data[c2:])
		if !slices.Equal(whole, three) || wc != hc {
			t.Fatalf("splits at %d,%d change the result", cut, c2)
		}
		if wc.DataLines != len(whole) || wc.MalformedLines > wc.DataLines || wc.DataLines > wc.Lines {
			t.Fatalf("inconsistent counters %+v for %d chunks", wc, len(whole))
		}
		for _, r := range whole {
			if r.Done && r.Malformed {
				t.Fatalf("Done and Malformed: %v", r)
			}
		}
	})
}
