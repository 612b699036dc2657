package loadgen

import (
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// Defaults used by [DefaultConfig], [BuiltinTypes] and the example program.
const (
	// DefaultBaseURL is the gateway the example program targets: a
	// loopback address, never hard-coded in Run.
	DefaultBaseURL = "http://127.0.0.1:8080"
	// DefaultModel is the model name of the built-in request types: the
	// name the tokentrace engine simulator serves.
	DefaultModel = "sim-llama"
	// DefaultRate is the default arrival rate, in requests per second.
	DefaultRate = 5.0
	// DefaultConcurrency is the default limit of requests in flight.
	DefaultConcurrency = 32
	// DefaultRequests is the default count bound.
	DefaultRequests = 100
	// DefaultSeed seeds the arrival times, the request mix and the prompts.
	DefaultSeed uint64 = 1

	// CharsPerToken is the rule of thumb used to size the filler prompts:
	// a prompt of n tokens is about CharsPerToken·n characters.
	CharsPerToken = 4
	// MaxLineBytes bounds one SSE line (one chunk) of a streamed answer.
	MaxLineBytes = 4 << 20
)

// Arrival processes, the values of Config.Arrival.
const (
	// ArrivalPoisson spaces arrivals by exponentially distributed gaps of
	// mean 1/Rate (a Poisson process, the usual open-loop model).
	ArrivalPoisson = "poisson"
	// ArrivalFixed spaces arrivals exactly 1/Rate apart.
	ArrivalFixed = "fixed"
)

// Endpoints, the values of RequestType.Endpoint.
const (
	// EndpointChat posts to /v1/chat/completions with one user message.
	EndpointChat = "chat"
	// EndpointCompletions posts to /v1/completions with a prompt.
	EndpointCompletions = "completions"
)

// RequestType is one kind of request of the mix.
type RequestType struct {
	// Name identifies the type in the results (e.g. "qa").
	Name string
	// Weight is the type's relative share of the arrivals (>= 0; the
	// weights of a mix need not add up to 1).
	Weight float64
	// PromptTokens is the approximate prompt size: a filler text of about
	// CharsPerToken characters per token, made from the seed (never real
	// user text).
	PromptTokens int
	// MaxTokens is sent as max_tokens (0: not sent).
	MaxTokens int
	// Model is sent as model (empty: not sent).
	Model string
	// Stream asks for an SSE stream. Go's zero value is false: the
	// built-in types, [NewRequestType] and the example's flags set it true.
	Stream bool
	// Endpoint is EndpointChat (the default when empty) or
	// EndpointCompletions.
	Endpoint string
}

// NewRequestType returns a streamed chat request type with the default
// model.
func NewRequestType(name string, weight float64, promptTokens, maxTokens int) RequestType {
	return RequestType{Name: name, Weight: weight, PromptTokens: promptTokens,
		MaxTokens: maxTokens, Model: DefaultModel, Stream: true, Endpoint: EndpointChat}
}

// BuiltinTypes returns the built-in request types, a mix of
//
//	qa        short question and answer:      50 prompt tokens, 100 output (weight 0.70)
//	analysis  long analysis:                 800 prompt tokens, 400 output (weight 0.25)
//	intruder  long prompt, short answer:    3000 prompt tokens,  50 output (weight 0.05)
//
// The intruders are the requests whose prefill slows down everybody else's
// decoding on a continuous-batching engine.
func BuiltinTypes() []RequestType {
	return []RequestType{
		NewRequestType("qa", 0.70, 50, 100),
		NewRequestType("analysis", 0.25, 800, 400),
		NewRequestType("intruder", 0.05, 3000, 50),
	}
}

// ParseMix picks request types from types by name with the given weights:
// spec is "name=weight,name=weight,..." (e.g. "qa=0.7,analysis=0.25,intruder=0.05");
// a name without "=weight" keeps its weight from types. An empty spec
// returns a copy of types.
func ParseMix(spec string, types []RequestType) ([]RequestType, error) {
	spec = strings.TrimSpace(spec)
	if spec == "" {
		return append([]RequestType(nil), types...), nil
	}
	var mix []RequestType
	seen := map[string]bool{}
	for _, part := range strings.Split(spec, ",") {
		name, w, hasWeight := strings.Cut(strings.TrimSpace(part), "=")
		name = strings.TrimSpace(name)
		i := indexType(types, name)
		if i < 0 {
			return nil, fmt.Errorf("mix: unknown request type %q (known: %s)", name, typeNames(types))
		}
		if seen[name] {
			return nil, fmt.Errorf("mix: request type %q given twice", name)
		}
		seen[name] = true
		t := types[i]
		if hasWeight {
			v, err := strconv.ParseFloat(strings.TrimSpace(w), 64)
			if err != nil || v < 0 || math.IsInf(v, 0) || math.IsNaN(v) {
				return nil, fmt.Errorf("mix: bad weight %q for %q", w, name)
			}
			t.Weight = v
		}
		mix = append(mix, t)
	}
	return mix, nil
}

func indexType(types []RequestType, name string) int {
	for i, t := range types {
		if t.Name == name {
			return i
		}
	}
	return -1
}

func typeNames(types []RequestType) string {
	names := make([]string, len(types))
	for i, t := range types {
		names[i] = t.Name
	}
	return strings.Join(names, ", ")
}

// Config describes one load run. Start from [DefaultConfig]: Go's zero
// value of a bool is false, so a Config literal that leaves IncludeUsage
// out does not ask for usage.
type Config struct {
	// BaseURL is the server's address, e.g. "http://127.0.0.1:8080"; the
	// OpenAI paths /v1/chat/completions and /v1/completions are appended
	// (a BaseURL ending in /v1 is accepted too).
	BaseURL string
	// Types is the request mix; each arrival picks one by weight.
	Types []RequestType
	// Rate is the mean arrival rate in requests per second (> 0;
	// math.Inf(1) sends every arrival at once, which with Concurrency
	// makes a closed loop).
	Rate float64
	// Arrival is ArrivalPoisson (the default when empty) or ArrivalFixed.
	Arrival string
	// Concurrency is the most requests in flight; an arrival that finds
	// the limit full waits, and the wait is reported. <= 0: no limit.
	Concurrency int
	// Requests bounds the run by count (<= 0: no count bound).
	Requests int
	// Duration bounds the run by time: no arrival is sent after it (<= 0:
	// no time bound). Requests in flight at a bound run to their end.
	// Run refuses a config with neither bound.
	Duration time.Duration
	// Seed makes the arrival times, the choice of types and the prompts
	// reproducible.
	Seed uint64
	// IncludeUsage asks streamed requests for a final usage chunk
	// (stream_options.include_usage), which gives exact token counts.
	IncludeUsage bool
	// Client sends the requests (nil: a client of Run's own, without
	// timeout, with enough idle connections for Concurrency).
	Client *http.Client
	// Headers are added to every request (e.g. Authorization). They are
	// never recorded.
	Headers map[string]string
	// Progress shows a progress bar (completed/target and errors) when it
	// is a terminal (an *os.File for which term.IsTerminal holds); in any
	// other case, and when nil, Run prints nothing while it runs.
	Progress io.Writer
	// Stop, when closed, ends the arrivals like a reached bound; requests
	// in flight run to their end. (Cancelling Run's context aborts them
	// instead.) Nil: never.
	Stop <-chan struct{}
}

// DefaultConfig returns a config with every default: the built-in mix at
// DefaultRate Poisson arrivals to DefaultBaseURL, DefaultConcurrency,
// DefaultRequests, DefaultSeed and IncludeUsage.
func DefaultConfig() Config {
	return Config{
		BaseURL:      DefaultBaseURL,
		Types:        BuiltinTypes(),
		Rate:         DefaultRate,
		Arrival:      ArrivalPoisson,
		Concurrency:  DefaultConcurrency,
		Requests:     DefaultRequests,
		Seed:         DefaultSeed,
		IncludeUsage: true,
	}
}

// validate checks cfg and returns a copy with defaults filled in.
func (cfg Config) validate() (Config, error) {
	c := cfg
	if c.Requests <= 0 && c.Duration <= 0 {
		return c, errors.New("loadgen: unbounded run: set Requests > 0 or Duration > 0")
	}
	u, err := url.Parse(c.BaseURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return c, fmt.Errorf("loadgen: BaseURL %q is not an http(s) URL", c.BaseURL)
	}
	if math.IsNaN(c.Rate) || c.Rate <= 0 {
		return c, fmt.Errorf("loadgen: Rate must be > 0 requests/s, got %v", c.Rate)
	}
	if math.IsInf(c.Rate, 1) && c.Concurrency <= 0 && c.Requests <= 0 {
		return c, errors.New("loadgen: an infinite Rate without Concurrency needs a Requests bound")
	}
	switch c.Arrival {
	case "":
		c.Arrival = ArrivalPoisson
	case ArrivalPoisson, ArrivalFixed:
	default:
		return c, fmt.Errorf("loadgen: Arrival %q: want %q or %q", c.Arrival, ArrivalPoisson, ArrivalFixed)
	}
	if len(c.Types) == 0 {
		return c, errors.New("loadgen: no request types")
	}
	c.Types = append([]RequestType(nil), c.Types...)
	var total float64
	seen := map[string]bool{}
	for i := range c.Types {
		t := &c.Types[i]
		if t.Name == "" {
			return c, fmt.Errorf("loadgen: request type %d has no name", i)
		}
		if seen[t.Name] {
			return c, fmt.Errorf("loadgen: request type %q given twice", t.Name)
		}
		seen[t.Name] = true
		if t.Weight < 0 || math.IsNaN(t.Weight) || math.IsInf(t.Weight, 0) {
			return c, fmt.Errorf("loadgen: request type %q: bad weight %v", t.Name, t.Weight)
		}
		if t.PromptTokens < 0 || t.MaxTokens < 0 {
			return c, fmt.Errorf("loadgen: request type %q: negative token count", t.Name)
		}
		switch t.Endpoint {
		case "":
			t.Endpoint = EndpointChat
		case EndpointChat, EndpointCompletions:
		default:
			return c, fmt.Errorf("loadgen: request type %q: endpoint %q: want %q or %q",
				t.Name, t.Endpoint, EndpointChat, EndpointCompletions)
		}
		total += t.Weight
	}
	if total <= 0 {
		return c, errors.New("loadgen: the request types' weights add up to 0")
	}
	return c, nil
}

// endpointURL is the full URL of a request of type t.
func endpointURL(base string, t RequestType) string {
	base = strings.TrimRight(base, "/")
	if !strings.HasSuffix(base, "/v1") {
		base += "/v1"
	}
	if t.Endpoint == EndpointCompletions {
		return base + "/completions"
	}
	return base + "/chat/completions"
}
