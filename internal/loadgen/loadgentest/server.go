// Package loadgentest is a fake OpenAI-compatible server for tests of the
// load generator and of what it drives: it streams SSE chunks on a script
// (token gaps, usage, errors, cut streams) and counts the requests it saw
// and how many were in flight at once. It listens on loopback only.
package loadgentest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"time"
)

// Script says how the server answers one request.
type Script struct {
	// Status, when >= 400, answers with that status and an OpenAI error
	// body carrying ErrorMessage.
	Status       int
	ErrorMessage string
	// FirstDelay is the time before the first token.
	FirstDelay time.Duration
	// Gaps are the times between consecutive tokens: len(Gaps)+1 tokens
	// are streamed (one content chunk each). A nil Gaps streams one token.
	Gaps []time.Duration
	// UsageTokens is completion_tokens in the usage chunk (0: the number
	// of tokens streamed).
	UsageTokens int
	// CutAfter, when > 0, ends the stream after that many content chunks
	// without usage or [DONE]; Abort makes that an abrupt connection
	// close instead of a clean end of the body.
	CutAfter int
	Abort    bool
	// StreamError, when non-empty, sends an error chunk with that message
	// after the content chunks, and no [DONE].
	StreamError string
	// TraceParent, when non-empty, is sent as the traceparent header.
	TraceParent string
}

// Request is what the server saw of one request (never the prompt text).
type Request struct {
	Path         string
	Model        string
	Stream       bool
	IncludeUsage bool
	MaxTokens    int
	PromptChars  int
	Header       http.Header
}

// Server is a running fake server.
type Server struct {
	*httptest.Server
	script func(Request) Script

	mu          sync.Mutex
	requests    []Request
	inFlight    int
	maxInFlight int
}

// NewServer starts a server that answers each request as script says
// (script gets what the request asked). Close it when done.
func NewServer(script func(Request) Script) *Server {
	s := &Server{script: script}
	s.Server = httptest.NewServer(http.HandlerFunc(s.serve))
	return s
}

// Requests returns the requests seen so far.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.requests...)
}

// MaxInFlight returns the most requests that were being answered at once.
func (s *Server) MaxInFlight() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.maxInFlight
}

// InFlight returns the requests being answered now.
func (s *Server) InFlight() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.inFlight
}

type body struct {
	Model    string `json:"model"`
	Messages []struct {
		Content string `json:"content"`
	} `json:"messages"`
	Prompt        *string `json:"prompt"`
	MaxTokens     int     `json:"max_tokens"`
	Stream        bool    `json:"stream"`
	StreamOptions *struct {
		IncludeUsage bool `json:"include_usage"`
	} `json:"stream_options"`
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	s.inFlight++
	s.maxInFlight = max(s.maxInFlight, s.inFlight)
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		s.inFlight--
		s.mu.Unlock()
	}()

	var b body
	if r.Method != http.MethodPost || json.NewDecoder(r.Body).Decode(&b) != nil {
		writeError(w, http.StatusBadRequest, "bad request")
		return
	}
	req := Request{Path: r.URL.Path, Model: b.Model, Stream: b.Stream, MaxTokens: b.MaxTokens,
		IncludeUsage: b.StreamOptions != nil && b.StreamOptions.IncludeUsage, Header: r.Header.Clone()}
	chat := strings.HasSuffix(r.URL.Path, "/chat/completions")
	for _, m := range b.Messages {
		req.PromptChars += len(m.Content)
	}
	if b.Prompt != nil {
		req.PromptChars = len(*b.Prompt)
	}
	s.mu.Lock()
	s.requests = append(s.requests, req)
	s.mu.Unlock()
	sc := s.script(req)

	if sc.TraceParent != "" {
		w.Header().Set("Traceparent", sc.TraceParent)
	}
	if sc.Status >= 400 {
		writeError(w, sc.Status, sc.ErrorMessage)
		return
	}
	tokens := len(sc.Gaps) + 1
	completion := sc.UsageTokens
	if completion == 0 {
		completion = tokens
	}
	usage := fmt.Sprintf(`{"prompt_tokens":%d,"completion_tokens":%d,"total_tokens":%d}`,
		req.PromptChars/4, completion, req.PromptChars/4+completion)
	ctx := r.Context()
	sleep := func(d time.Duration) bool {
		if d <= 0 {
			return true
		}
		t := time.NewTimer(d)
		defer t.Stop()
		select {
		case <-t.C:
			return true
		case <-ctx.Done():
			return false
		}
	}
	if !b.Stream {
		if !sleep(sc.FirstDelay + sum(sc.Gaps)) {
			return
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"id":"cmpl-1","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"x"}}],"usage":%s}`, usage)
		return
	}

	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	fl := w.(http.Flusher)
	send := func(data string) {
		fmt.Fprintf(w, "data: %s\n\n", data)
		fl.Flush()
	}
	if chat { // a role-only first chunk carries no token
		send(`{"id":"c1","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"role":"assistant","content":""}}]}`)
	}
	fmt.Fprint(w, ": keep-alive comment\n\n")
	fl.Flush()
	for i := 0; i < tokens; i++ {
		d := sc.FirstDelay
		if i > 0 {
			d = sc.Gaps[i-1]
		}
		if !sleep(d) {
			return
		}
		if chat {
			send(fmt.Sprintf(`{"id":"c1","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":"t%d "}}]}`, i))
		} else {
			send(fmt.Sprintf(`{"id":"c1","object":"text_completion","choices":[{"index":0,"text":"t%d "}]}`, i))
		}
		if sc.CutAfter > 0 && i+1 >= sc.CutAfter {
			if sc.Abort {
				panic(http.ErrAbortHandler) // closes the connection mid-body
			}
			return
		}
	}
	if sc.StreamError != "" {
		send(fmt.Sprintf(`{"error":{"message":%q,"type":"server_error"}}`, sc.StreamError))
		return
	}
	send(`{"id":"c1","object":"chat.completion.chunk","choices":[{"index":0,"delta":{},"finish_reason":"length"}]}`)
	if req.IncludeUsage {
		send(`{"id":"c1","object":"chat.completion.chunk","choices":[],"usage":` + usage + `}`)
	}
	send("[DONE]")
}

func writeError(w http.ResponseWriter, status int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	fmt.Fprintf(w, `{"error":{"message":%q,"type":"invalid_request_error","param":null,"code":%d}}`, msg, status)
}

func sum(ds []time.Duration) time.Duration {
	var t time.Duration
	for _, d := range ds {
		t += d
	}
	return t
}

// Gaps returns n gaps of d each.
func Gaps(n int, d time.Duration) []time.Duration {
	g := make([]time.Duration, n)
	for i := range g {
		g[i] = d
	}
	return g
}
