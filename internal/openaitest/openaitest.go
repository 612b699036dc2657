// Package openaitest is an OpenAI-compatible engine for tests that need
// real spans recorded by the instrument middleware.
package openaitest

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"
)

// Engine streams a role chunk, Tokens chat chunks (Gap before each),
// a finish chunk, a usage chunk when Usage is set, and [DONE]. OnToken
// runs after each token is written, with the request (whose context holds
// the middleware's span). A request without "stream":true gets a JSON
// answer; one with the header X-Fail gets a 503.
type Engine struct {
	Tokens  int
	Gap     func(i int) time.Duration
	OnToken func(r *http.Request, i int)
	Usage   bool
}

func (e *Engine) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	if r.Header.Get("X-Fail") != "" {
		http.Error(w, `{"error":{"message":"overloaded"}}`, http.StatusServiceUnavailable)
		return
	}
	if !strings.Contains(string(body), `"stream":true`) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"id":"chatcmpl-9","object":"chat.completion","model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"hi"},"finish_reason":"stop"}],"usage":{"prompt_tokens":5,"completion_tokens":1,"total_tokens":6}}`)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	rc := http.NewResponseController(w)
	write := func(s string) {
		_, _ = io.WriteString(w, s)
		_ = rc.Flush()
	}
	write(`data: {"id":"chatcmpl-1","object":"chat.completion.chunk","model":"m","choices":[{"index":0,"delta":{"role":"assistant","content":""}}]}` + "\n\n")
	for i := 0; i < e.Tokens; i++ {
		if e.Gap != nil {
			if d := e.Gap(i); d > 0 {
				time.Sleep(d)
			}
		}
		write(fmt.Sprintf(`data: {"id":"chatcmpl-1","object":"chat.completion.chunk","model":"m","choices":[{"index":0,"delta":{"content":"t%d "}}]}`+"\n\n", i))
		if e.OnToken != nil {
			e.OnToken(r, i)
		}
	}
	write(`data: {"id":"chatcmpl-1","object":"chat.completion.chunk","model":"m","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}` + "\n\n")
	if e.Usage {
		write(fmt.Sprintf(`data: {"id":"chatcmpl-1","object":"chat.completion.chunk","model":"m","choices":[],"usage":{"prompt_tokens":12,"completion_tokens":%d,"total_tokens":%d}}`+"\n\n", e.Tokens, e.Tokens+12))
	}
	write("data: [DONE]\n\n")
}
