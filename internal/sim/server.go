package sim

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"
	"unicode/utf8"

	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

// DefaultMaxTokens is the output length when a request sets none.
const DefaultMaxTokens = 256

// maxBody bounds request bodies (an oversized prompt is refused by its
// token count before this matters).
const maxBody = 32 << 20

// NewServer returns the OpenAI-compatible HTTP API of an engine:
// POST /v1/chat/completions and /v1/completions (streaming with
// stream_options.include_usage and continuous_usage_stats, or not),
// GET /v1/models, GET /metrics (vLLM names) and GET /health.
func NewServer(e *Engine) http.Handler {
	mux := http.NewServeMux()
	s := &server{e: e}
	mux.HandleFunc("POST /v1/chat/completions", func(w http.ResponseWriter, r *http.Request) { s.complete(w, r, true) })
	mux.HandleFunc("POST /v1/completions", func(w http.ResponseWriter, r *http.Request) { s.complete(w, r, false) })
	mux.HandleFunc("GET /v1/models", s.models)
	mux.Handle("GET /metrics", e.metrics.Handler())
	mux.HandleFunc("GET /health", func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusOK) })
	return mux
}

type server struct{ e *Engine }

type completionRequest struct {
	Model    string `json:"model"`
	Messages []struct {
		Role    string          `json:"role"`
		Content json.RawMessage `json:"content"`
	} `json:"messages"`
	Prompt              json.RawMessage `json:"prompt"`
	MaxTokens           *int            `json:"max_tokens"`
	MaxCompletionTokens *int            `json:"max_completion_tokens"`
	Stream              bool            `json:"stream"`
	StreamOptions       *struct {
		IncludeUsage         bool `json:"include_usage"`
		ContinuousUsageStats bool `json:"continuous_usage_stats"`
	} `json:"stream_options"`
}

// apiError writes an OpenAI-style error body.
func apiError(w http.ResponseWriter, status int, typ, param, code, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	body := map[string]any{"error": map[string]any{"message": msg, "type": typ, "param": nilIfEmpty(param), "code": nilIfEmpty(code)}}
	_ = json.NewEncoder(w).Encode(body)
}

func nilIfEmpty(s string) any {
	if s == "" {
		return nil
	}
	return s
}

func (s *server) models(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{"object": "list", "data": []map[string]any{
		{"id": s.e.cfg.Model, "object": "model", "created": 0, "owned_by": "tokentrace-sim", "max_model_len": s.e.cfg.Profile.MaxContext},
	}})
}

// promptTokens estimates a prompt's tokens the way a BPE tokenizer roughly
// does for English: one token per four characters.
func promptTokens(chars int) int { return max(1, (chars+3)/4) }

func textChars(v json.RawMessage) (int, error) {
	if len(v) == 0 || string(v) == "null" {
		return 0, nil
	}
	var s string
	if err := json.Unmarshal(v, &s); err == nil {
		return utf8.RuneCountInString(s), nil
	}
	var parts []json.RawMessage
	if err := json.Unmarshal(v, &parts); err != nil {
		return 0, errors.New("must be a string or an array")
	}
	n := 0
	for _, p := range parts {
		var part struct {
			Text json.RawMessage `json:"text"`
		}
		if json.Unmarshal(p, &part) == nil && part.Text != nil {
			c, err := textChars(part.Text)
			if err != nil {
				return 0, err
			}
			n += c
			continue
		}
		c, err := textChars(p)
		if err != nil {
			return 0, err
		}
		n += c
	}
	return n, nil
}

func (s *server) complete(w http.ResponseWriter, r *http.Request, chat bool) {
	body, err := io.ReadAll(io.LimitReader(r.Body, maxBody+1))
	if err != nil {
		apiError(w, http.StatusBadRequest, "invalid_request_error", "", "", "could not read the request body: "+err.Error())
		return
	}
	if len(body) > maxBody {
		apiError(w, http.StatusRequestEntityTooLarge, "invalid_request_error", "", "", "request body too large")
		return
	}
	var req completionRequest
	if err := json.Unmarshal(body, &req); err != nil {
		apiError(w, http.StatusBadRequest, "invalid_request_error", "", "", "invalid JSON body: "+err.Error())
		return
	}
	if req.Model != s.e.cfg.Model {
		apiError(w, http.StatusNotFound, "invalid_request_error", "model", "model_not_found",
			fmt.Sprintf("The model `%s` does not exist.", req.Model))
		return
	}
	chars := 0
	if chat {
		if len(req.Messages) == 0 {
			apiError(w, http.StatusBadRequest, "invalid_request_error", "messages", "", "messages must be a non-empty array")
			return
		}
		for i, m := range req.Messages {
			c, err := textChars(m.Content)
			if err != nil {
				apiError(w, http.StatusBadRequest, "invalid_request_error", fmt.Sprintf("messages[%d].content", i), "", "content "+err.Error())
				return
			}
			chars += c
		}
	} else {
		c, err := textChars(req.Prompt)
		if err != nil || req.Prompt == nil {
			apiError(w, http.StatusBadRequest, "invalid_request_error", "prompt", "", "prompt must be a string or an array of strings")
			return
		}
		chars = c
	}
	maxTokens := DefaultMaxTokens
	for _, p := range []*int{req.MaxTokens, req.MaxCompletionTokens} {
		if p != nil {
			if *p <= 0 {
				apiError(w, http.StatusBadRequest, "invalid_request_error", "max_tokens", "", fmt.Sprintf("max_tokens must be at least 1, got %d.", *p))
				return
			}
			maxTokens = *p
		}
	}
	pt := promptTokens(chars)
	if limit := s.e.cfg.Profile.MaxContext; pt+maxTokens > limit {
		apiError(w, http.StatusBadRequest, "invalid_request_error", "messages", "context_length_exceeded",
			fmt.Sprintf("This model's maximum context length is %d tokens. However, you requested %d tokens (%d in the messages, %d in the completion).", limit, pt+maxTokens, pt, maxTokens))
		return
	}
	tid := trace.SpanContextFromContext(propagation.TraceContext{}.Extract(r.Context(), propagation.HeaderCarrier(r.Header))).TraceID()
	sr, err := s.e.Submit(pt, maxTokens, tid)
	if err != nil {
		apiError(w, http.StatusServiceUnavailable, "server_error", "", "", err.Error())
		return
	}
	obj := "text_completion"
	if chat {
		obj = "chat.completion"
	}
	if req.Stream {
		var usage, continuous bool
		if req.StreamOptions != nil {
			usage, continuous = req.StreamOptions.IncludeUsage, req.StreamOptions.ContinuousUsageStats
		}
		s.stream(w, r, sr, chat, obj+chunkSuffix(chat), usage, continuous)
		return
	}
	s.whole(w, r, sr, chat, obj)
}

func chunkSuffix(chat bool) string {
	if chat {
		return ".chunk"
	}
	return ""
}

// word is the text of output token i: meaningless, deterministic.
func word(i int) string {
	words := [...]string{"the", " engine", " batch", " token", " step", " cache", " prefill", " decode"}
	return words[i%len(words)]
}

type usage struct {
	PromptTokens     int `json:"prompt_tokens"`
	CompletionTokens int `json:"completion_tokens"`
	TotalTokens      int `json:"total_tokens"`
}

func (s *server) stream(w http.ResponseWriter, r *http.Request, sr *Request, chat bool, obj string, withUsage, continuous bool) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(w)
	created := time.Now().Unix()
	send := func(v any) bool {
		b, _ := json.Marshal(v)
		if _, err := fmt.Fprintf(w, "data: %s\n\n", b); err != nil {
			return false
		}
		return rc.Flush() == nil
	}
	chunk := func(choice map[string]any, u *usage) map[string]any {
		m := map[string]any{"id": sr.ID, "object": obj, "created": created, "model": s.e.cfg.Model, "choices": []any{choice}}
		if u != nil {
			m["usage"] = u
		}
		if choice == nil {
			m["choices"] = []any{}
		}
		return m
	}
	if chat && !send(chunk(map[string]any{"index": 0, "delta": map[string]any{"role": "assistant", "content": ""}, "logprobs": nil, "finish_reason": nil}, nil)) {
		sr.Cancel()
		return
	}
	n := 0
	for {
		select {
		case <-r.Context().Done():
			sr.Cancel()
			return
		case tok, ok := <-sr.Tokens:
			if !ok {
				if n < sr.MaxTokens {
					// The engine stopped (shut down): end without [DONE].
					return
				}
				fin := map[string]any{"index": 0, "finish_reason": "length", "logprobs": nil}
				if chat {
					fin["delta"] = map[string]any{}
				} else {
					fin["text"] = ""
				}
				send(chunk(fin, nil))
				if withUsage {
					send(chunk(nil, &usage{sr.PromptTokens, n, sr.PromptTokens + n}))
				}
				_, _ = io.WriteString(w, "data: [DONE]\n\n")
				_ = rc.Flush()
				return
			}
			n = tok.Index + 1
			c := map[string]any{"index": 0, "logprobs": nil, "finish_reason": nil}
			if chat {
				c["delta"] = map[string]any{"content": word(tok.Index)}
			} else {
				c["text"] = word(tok.Index)
			}
			var u *usage
			if continuous {
				u = &usage{sr.PromptTokens, n, sr.PromptTokens + n}
			}
			if !send(chunk(c, u)) {
				sr.Cancel()
				return
			}
		}
	}
}

func (s *server) whole(w http.ResponseWriter, r *http.Request, sr *Request, chat bool, obj string) {
	var text strings.Builder
	n := 0
	for {
		select {
		case <-r.Context().Done():
			sr.Cancel()
			return
		case tok, ok := <-sr.Tokens:
			if ok {
				text.WriteString(word(tok.Index))
				n = tok.Index + 1
				continue
			}
			if n < sr.MaxTokens {
				apiError(w, http.StatusServiceUnavailable, "server_error", "", "", "engine stopped")
				return
			}
			choice := map[string]any{"index": 0, "finish_reason": "length", "logprobs": nil}
			if chat {
				choice["message"] = map[string]any{"role": "assistant", "content": text.String()}
			} else {
				choice["text"] = text.String()
			}
			w.Header().Set("Content-Type", "application/json")
			_ = json.NewEncoder(w).Encode(map[string]any{
				"id": sr.ID, "object": obj, "created": time.Now().Unix(), "model": s.e.cfg.Model,
				"choices": []any{choice}, "usage": usage{sr.PromptTokens, n, sr.PromptTokens + n},
			})
			return
		}
	}
}
