package loadgen

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"
)

// Bounds of what is read from a response outside of the stream itself.
const (
	maxErrorBody   = 64 << 10 // an error response's body
	maxNonStream   = 16 << 20 // a whole non-streamed answer
	maxMessageLen  = 300      // an error message kept in a record
	maxTraceHeader = 128
)

type message struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

type streamOptions struct {
	IncludeUsage bool `json:"include_usage"`
}

type requestBody struct {
	Model         string         `json:"model,omitempty"`
	Messages      []message      `json:"messages,omitempty"`
	Prompt        *string        `json:"prompt,omitempty"`
	MaxTokens     int            `json:"max_tokens,omitempty"`
	Stream        bool           `json:"stream"`
	StreamOptions *streamOptions `json:"stream_options,omitempty"`
}

// usage is the OpenAI usage object.
type usage struct {
	PromptTokens     int `json:"prompt_tokens"`
	CompletionTokens int `json:"completion_tokens"`
}

// apiError is the OpenAI error object; vLLM's older servers put message
// at the top level instead.
type apiError struct {
	Message string `json:"message"`
	Type    string `json:"type"`
}

// chunk is the part of a streamed chunk (chat or completions) that
// matters here; the text itself is only checked for being non-empty.
type chunk struct {
	Choices []struct {
		Text  string `json:"text"`
		Delta struct {
			Content          string          `json:"content"`
			ReasoningContent string          `json:"reasoning_content"`
			Reasoning        string          `json:"reasoning"`
			ToolCalls        json.RawMessage `json:"tool_calls"`
		} `json:"delta"`
	} `json:"choices"`
	Usage *usage          `json:"usage"`
	Error json.RawMessage `json:"error"`
}

// hasContent reports whether the chunk carries output tokens.
func (c *chunk) hasContent() bool {
	for i := range c.Choices {
		ch := &c.Choices[i]
		d := &ch.Delta
		if ch.Text != "" || d.Content != "" || d.ReasoningContent != "" || d.Reasoning != "" ||
			(len(d.ToolCalls) > 0 && string(d.ToolCalls) != "null") {
			return true
		}
	}
	return false
}

// nonStream is the part of a whole answer that matters here.
type nonStream struct {
	Usage *usage          `json:"usage"`
	Error json.RawMessage `json:"error"`
}

// requester sends the requests of one run.
type requester struct {
	client       *http.Client
	baseURL      string
	headers      map[string]string
	includeUsage bool
	seed         uint64
}

// do sends the request of arrival a, of type t, and measures it. It never
// returns an error: what went wrong is in the record.
func (q *requester) do(ctx context.Context, a Arrival, t RequestType) Record {
	rec := Record{Index: a.Index, Type: t.Name, Scheduled: a.Offset, Stream: t.Stream}
	body, err := q.body(a, t)
	if err != nil {
		rec.Err = err.Error()
		return rec
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, endpointURL(q.baseURL, t), bytes.NewReader(body))
	if err != nil {
		rec.Err = "build request: " + err.Error()
		return rec
	}
	req.Header.Set("Content-Type", "application/json")
	if t.Stream {
		req.Header.Set("Accept", "text/event-stream")
	} else {
		req.Header.Set("Accept", "application/json")
	}
	// The request type, for a gateway that labels its metrics by prompt
	// type (the example gateway's classifier reads it).
	req.Header.Set("X-Prompt-Type", t.Name)
	for k, v := range q.headers {
		req.Header.Set(k, v)
	}

	rec.Start = time.Now()
	resp, err := q.client.Do(req)
	if err != nil {
		rec.E2E = time.Since(rec.Start)
		rec.fail(ctx, err)
		return rec
	}
	defer resp.Body.Close()
	rec.Status = resp.StatusCode
	rec.TraceID = traceID(resp.Header)

	if resp.StatusCode >= 400 {
		msg := errorBody(io.LimitReader(resp.Body, maxErrorBody))
		rec.E2E = time.Since(rec.Start)
		rec.Err = fmt.Sprintf("HTTP %d", resp.StatusCode)
		if msg != "" {
			rec.Err += ": " + msg
		} else if s := http.StatusText(resp.StatusCode); s != "" {
			rec.Err += " " + s
		}
		return rec
	}
	if t.Stream {
		q.readStream(ctx, resp.Body, &rec)
	} else {
		q.readWhole(ctx, resp.Body, &rec)
	}
	return rec
}

func (q *requester) body(a Arrival, t RequestType) ([]byte, error) {
	b := requestBody{Model: t.Model, MaxTokens: t.MaxTokens, Stream: t.Stream}
	prompt := fillerPrompt(q.seed, a.Index, t.PromptTokens)
	if t.Endpoint == EndpointCompletions {
		b.Prompt = &prompt
	} else {
		b.Messages = []message{{Role: "user", Content: prompt}}
	}
	if t.Stream && q.includeUsage {
		b.StreamOptions = &streamOptions{IncludeUsage: true}
	}
	return json.Marshal(b)
}

// readStream reads an SSE stream: one JSON chunk per "data:" line, to
// "data: [DONE]". Other lines (comments, event:, id:, retry:, blank) are
// skipped. A chunk's arrival time is when its line was read.
func (q *requester) readStream(ctx context.Context, body io.Reader, rec *Record) {
	sc := bufio.NewScanner(body)
	sc.Buffer(make([]byte, 0, 64<<10), MaxLineBytes)
	var (
		done   bool
		chunks int
		u      *usage
	)
	for sc.Scan() {
		now := time.Now()
		line := sc.Bytes()
		data, ok := bytes.CutPrefix(line, []byte("data:"))
		if !ok {
			continue
		}
		data = bytes.TrimSpace(data)
		if string(data) == "[DONE]" {
			done = true
			break
		}
		if len(data) == 0 {
			continue
		}
		var c chunk
		if err := json.Unmarshal(data, &c); err != nil {
			rec.E2E = time.Since(rec.Start)
			rec.Err = fmt.Sprintf("malformed stream chunk %d: not JSON", chunks+1)
			rec.finishTokens(u)
			return
		}
		chunks++
		if msg := errorMessage(c.Error); msg != "" {
			rec.E2E = time.Since(rec.Start)
			rec.Err = "stream error: " + msg
			rec.finishTokens(u)
			return
		}
		if c.Usage != nil {
			u = c.Usage
		}
		if c.hasContent() {
			off := now.Sub(rec.Start)
			if len(rec.TokenTimes) == 0 {
				rec.TTFT = off
			}
			rec.TokenTimes = append(rec.TokenTimes, off)
		}
	}
	rec.E2E = time.Since(rec.Start)
	rec.finishTokens(u)
	if done {
		// Let the connection be reused: there is at most a trailing newline.
		_, _ = io.Copy(io.Discard, io.LimitReader(body, 4<<10))
		return
	}
	err := sc.Err()
	if errors.Is(err, bufio.ErrTooLong) {
		rec.Err = fmt.Sprintf("stream line longer than %d bytes", MaxLineBytes)
		return
	}
	if err != nil && ctx.Err() != nil {
		rec.fail(ctx, err)
		return
	}
	rec.Err = fmt.Sprintf("stream truncated without [DONE] after %d content chunks", len(rec.TokenTimes))
	if err != nil {
		rec.Err += ": " + err.Error()
	}
}

// readWhole reads a non-streamed answer: latency and usage only.
func (q *requester) readWhole(ctx context.Context, body io.Reader, rec *Record) {
	data, err := io.ReadAll(io.LimitReader(body, maxNonStream))
	rec.E2E = time.Since(rec.Start)
	if err != nil {
		rec.fail(ctx, err)
		return
	}
	var ns nonStream
	if err := json.Unmarshal(data, &ns); err != nil {
		rec.Err = "malformed response: not JSON"
		return
	}
	if msg := errorMessage(ns.Error); msg != "" {
		rec.Err = "response error: " + msg
		return
	}
	rec.finishTokens(ns.Usage)
}

// finishTokens sets the token counts: from usage when the server sent it,
// else one token per content-bearing chunk.
func (r *Record) finishTokens(u *usage) {
	r.OutputTokens = len(r.TokenTimes)
	if u != nil {
		r.UsageReported = true
		r.PromptTokens = u.PromptTokens
		r.OutputTokens = u.CompletionTokens
	}
}

// fail records a transport error, or the cancellation of the run.
func (r *Record) fail(ctx context.Context, err error) {
	if ctx.Err() != nil {
		r.Canceled = true
		r.Err = "canceled: " + context.Cause(ctx).Error()
		return
	}
	r.Err = truncate(err.Error())
}

// errorBody extracts the message of an error response: the OpenAI error
// object {"error": {"message": ...}}, {"error": "..."} or vLLM's
// {"message": ...}. A body that is none of these gives "".
func errorBody(r io.Reader) string {
	data, err := io.ReadAll(r)
	if err != nil {
		return ""
	}
	var v struct {
		Error   json.RawMessage `json:"error"`
		Message string          `json:"message"`
	}
	if json.Unmarshal(data, &v) != nil {
		return ""
	}
	if msg := errorMessage(v.Error); msg != "" {
		return msg
	}
	return truncate(v.Message)
}

// errorMessage reads an OpenAI error value: an object with a message, or
// a string.
func errorMessage(raw json.RawMessage) string {
	if len(raw) == 0 || string(raw) == "null" {
		return ""
	}
	var e apiError
	if json.Unmarshal(raw, &e) == nil {
		if e.Message != "" {
			return truncate(e.Message)
		}
		if e.Type != "" {
			return truncate(e.Type)
		}
		return "unspecified error"
	}
	var s string
	if json.Unmarshal(raw, &s) == nil && s != "" {
		return truncate(s)
	}
	return "unspecified error"
}

func truncate(s string) string {
	s = strings.TrimSpace(s)
	if len(s) <= maxMessageLen {
		return s
	}
	cut := maxMessageLen
	for cut > 0 && s[cut]&0xC0 == 0x80 { // do not split a UTF-8 sequence
		cut--
	}
	return s[:cut] + "…"
}

// traceID returns the trace id the response names: the trace-id field of
// a W3C traceparent header, else an X-Trace-Id header; "" when neither.
func traceID(h http.Header) string {
	if tp := h.Get("Traceparent"); tp != "" {
		// version "-" trace-id (32 hex) "-" parent-id (16 hex) "-" flags
		parts := strings.Split(tp, "-")
		if len(parts) >= 4 && len(parts[1]) == 32 && isHex(parts[1]) && strings.Trim(parts[1], "0") != "" {
			return strings.ToLower(parts[1])
		}
	}
	if id := strings.TrimSpace(h.Get("X-Trace-Id")); id != "" && len(id) <= maxTraceHeader {
		return id
	}
	return ""
}

func isHex(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F') {
			return false
		}
	}
	return true
}
