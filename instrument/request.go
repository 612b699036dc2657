package instrument

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"unicode/utf8"

	"github.com/tokentrace/tokentrace/semconv"
)

// requestBody is the part of an OpenAI-compatible request body the
// middleware reads. Prompt text is only measured, never kept.
type requestBody struct {
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

// readRequestInfo reads up to limit bytes of r's body to learn what the
// request asks for, and puts back a body that yields exactly the original
// bytes. A body it cannot parse gives a RequestInfo with only the
// operation set.
func readRequestInfo(r *http.Request, body *io.ReadCloser, limit int64) RequestInfo {
	info := RequestInfo{Operation: operationOf(r.URL.Path)}
	if *body == nil || *body == http.NoBody {
		return info
	}
	buf, err := io.ReadAll(io.LimitReader(*body, limit+1))
	if err != nil || int64(len(buf)) > limit {
		*body = &replayBody{Reader: io.MultiReader(bytes.NewReader(buf), *body), c: *body}
		return info
	}
	// The original reached EOF: never read it again. A server closes a
	// request body once the handler starts answering, and a Transport
	// still sending the body upstream (a ReverseProxy whose engine
	// answered before reading it) must then get EOF, not
	// http.ErrBodyReadAfterClose, which breaks the upstream connection.
	*body = &replayBody{Reader: bytes.NewReader(buf), c: *body}
	parseRequestBody(buf, &info)
	return info
}

// parseRequestBody fills info from an OpenAI-compatible JSON request body.
func parseRequestBody(buf []byte, info *RequestInfo) {
	var rb requestBody
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
			info.PromptChars += textChars(msg.Content)
		}
	}
	info.PromptChars += textChars(rb.Prompt)
}

// textChars counts the characters of text in a JSON value: a string, an
// array of strings, or content parts ({"type":"text","text":...}).
func textChars(v json.RawMessage) int {
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
			n += textChars(p)
		}
		return n
	case '{':
		var part struct {
			Text json.RawMessage `json:"text"`
		}
		if json.Unmarshal(v, &part) == nil {
			return textChars(part.Text)
		}
	}
	return 0
}

func operationOf(path string) string {
	if strings.HasSuffix(path, "/chat/completions") {
		return semconv.OperationChat
	}
	return semconv.OperationTextCompletion
}

// replayBody gives back the bytes read ahead and then the rest of the
// original body, and closes the original.
type replayBody struct {
	io.Reader
	c io.Closer
}

func (b *replayBody) Close() error { return b.c.Close() }

// responseBody is the part of a non-streaming response the middleware reads.
type responseBody struct {
	ID      string `json:"id"`
	Model   string `json:"model"`
	Choices []struct {
		FinishReason string `json:"finish_reason"`
	} `json:"choices"`
	Usage *struct {
		PromptTokens     int `json:"prompt_tokens"`
		CompletionTokens int `json:"completion_tokens"`
	} `json:"usage"`
}
