// Package replay plays back recordings of a real continuous-batching
// engine (shared/data/realengine: llama.cpp's server, with ground truth)
// through the instrumented gateway: a replay engine serves each recorded
// stream as OpenAI-compatible SSE, writing token i at its recorded time,
// and each request is sent at its recorded time. The spans the gateway
// makes are then those of the real run, and the recording's truth says
// which segments the analyzer must find.
package replay

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/tokentrace/tokentrace/instrument"
	"github.com/tokentrace/tokentrace/internal/balancer"
)

// Schema is the recording format this package reads.
const Schema = "tokentrace.realengine/v1"

// Recording is one recorded run.
type Recording struct {
	Schema   string   `json:"schema"`
	Scenario string   `json:"scenario"`
	Streams  []Stream `json:"streams"`
	Truth    struct {
		Rule    string        `json:"rule"`
		Streams []TruthStream `json:"streams"`
	} `json:"truth"`
}

// Stream is one recorded request.
type Stream struct {
	Name    string    `json:"name"`
	Role    string    `json:"role"`
	SendMs  float64   `json:"send_ms"`
	FirstMs float64   `json:"first_ms"`
	TMs     []float64 `json:"t_ms"`
	Timings struct {
		PromptN int `json:"prompt_n"`
	} `json:"timings"`
}

// TruthStream is the ground truth of one stream.
type TruthStream struct {
	Name     string         `json:"name"`
	Tokens   int            `json:"tokens"`
	Segments []TruthSegment `json:"segments"`
}

// TruthSegment is one labelled segment: 0-based token indices.
type TruthSegment struct {
	StartToken int      `json:"start_token"`
	EndToken   int      `json:"end_token"`
	Cause      string   `json:"cause"`
	By         []string `json:"by"`
}

// Load reads a recording.
func Load(path string) (*Recording, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var r Recording
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("replay: %s: %w", path, err)
	}
	if r.Schema != Schema {
		return nil, fmt.Errorf("replay: %s: schema %q, want %q", path, r.Schema, Schema)
	}
	for _, s := range r.Streams {
		if len(s.TMs) == 0 || s.FirstMs < s.SendMs {
			return nil, fmt.Errorf("replay: %s: stream %s has no usable token times", path, s.Name)
		}
	}
	return &r, nil
}

// Result maps each stream to the trace its request made, and says how
// faithfully the recorded times were kept.
type Result struct {
	TraceIDs map[string]string // stream name → trace id (hex)
	// Lateness is how late the replay engine wrote tokens against their
	// recorded times (P99 and max over all tokens): a busy host delays
	// timers, and a late token is a gap the recording did not have.
	LatenessP99, LatenessMax time.Duration
}

// header names the stream a request replays.
const header = "X-Replay-Stream"

// Play replays rec through a gateway built like the example gateway
// (instrument.Handler around a ReverseProxy whose Transport is
// instrument.Transport) that sends spans to tp. Each stream's request is
// sent at its recorded time; the replay engine holds each token until its
// recorded time. It returns when every stream has been read to its end.
func Play(ctx context.Context, rec *Recording, tp trace.TracerProvider) (*Result, error) {
	start := time.Now().Add(50 * time.Millisecond) // the run's common start
	byName := map[string]*Stream{}
	for i := range rec.Streams {
		byName[rec.Streams[i].Name] = &rec.Streams[i]
	}
	var (
		mu   sync.Mutex
		ids  = map[string]string{}
		late []time.Duration
	)
	eng := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s := byName[r.Header.Get(header)]
		if s == nil {
			http.Error(w, `{"error":{"message":"unknown stream","type":"invalid_request_error"}}`, http.StatusNotFound)
			return
		}
		_, _ = io.Copy(io.Discard, r.Body)
		if sc := trace.SpanContextFromContext(propagatorExtract(r)); sc.IsValid() {
			mu.Lock()
			ids[s.Name] = sc.TraceID().String()
			mu.Unlock()
		}
		l := serve(w, r, s, start)
		mu.Lock()
		late = append(late, l...)
		mu.Unlock()
	})
	engLn, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	engSrv := &http.Server{Handler: eng, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = engSrv.Serve(engLn) }()
	defer engSrv.Close()

	tr := instrument.NewTracker()
	opts := []instrument.Option{instrument.WithTracerProvider(tp), instrument.WithTracker(tr)}
	proxy, err := balancer.New([]*url.URL{{Scheme: "http", Host: engLn.Addr().String()}},
		instrument.Transport(http.DefaultTransport, opts...), slog.New(slog.DiscardHandler))
	if err != nil {
		return nil, err
	}
	gwLn, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	gwSrv := &http.Server{Handler: instrument.Handler(proxy, opts...), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = gwSrv.Serve(gwLn) }()
	defer gwSrv.Close()

	client := &http.Client{Transport: &http.Transport{DisableCompression: true, MaxIdleConnsPerHost: 16}}
	defer client.CloseIdleConnections()
	var wg sync.WaitGroup
	errs := make(chan error, len(rec.Streams))
	for i := range rec.Streams {
		s := &rec.Streams[i]
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := sleepUntil(ctx, start.Add(msDur(s.SendMs))); err != nil {
				errs <- err
				return
			}
			body := fmt.Sprintf(`{"model":"llama-realengine","stream":true,"stream_options":{"include_usage":true},"max_tokens":%d,"prompt":%q}`,
				len(s.TMs), strings.Repeat("w", 4*max(s.Timings.PromptN, 1)))
			req, _ := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+gwLn.Addr().String()+"/v1/completions", strings.NewReader(body))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set(header, s.Name)
			resp, err := client.Do(req)
			if err != nil {
				errs <- fmt.Errorf("replay: stream %s: %w", s.Name, err)
				return
			}
			b, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			if err != nil || resp.StatusCode != http.StatusOK || !strings.HasSuffix(string(b), "data: [DONE]\n\n") {
				errs <- fmt.Errorf("replay: stream %s: status %d, err %v", s.Name, resp.StatusCode, err)
			}
		}()
	}
	wg.Wait()
	close(errs)
	var all []error
	for err := range errs {
		all = append(all, err)
	}
	if err := errors.Join(all...); err != nil {
		return nil, err
	}
	if err := instrument.Flush(ctx); err != nil {
		return nil, err
	}
	res := &Result{TraceIDs: ids}
	mu.Lock()
	slices.Sort(late)
	if n := len(late); n > 0 {
		res.LatenessP99, res.LatenessMax = late[(n-1)*99/100], late[n-1]
	}
	mu.Unlock()
	return res, nil
}

// serve writes s's tokens at their recorded times, as a completions
// stream with a final usage chunk, and returns how late each token was.
func serve(w http.ResponseWriter, r *http.Request, s *Stream, start time.Time) []time.Duration {
	late := make([]time.Duration, 0, len(s.TMs))
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(w)
	id := "cmpl-" + s.Name
	for i, t := range s.TMs {
		due := start.Add(msDur(t))
		if sleepUntil(r.Context(), due) != nil {
			return late
		}
		fmt.Fprintf(w, "data: {\"id\":%q,\"object\":\"text_completion\",\"model\":\"llama-realengine\",\"choices\":[{\"index\":0,\"text\":\"t%d \",\"finish_reason\":null}]}\n\n", id, i)
		_ = rc.Flush()
		late = append(late, time.Since(due))
	}
	fmt.Fprintf(w, "data: {\"id\":%q,\"object\":\"text_completion\",\"model\":\"llama-realengine\",\"choices\":[{\"index\":0,\"text\":\"\",\"finish_reason\":\"length\"}]}\n\n", id)
	fmt.Fprintf(w, "data: {\"id\":%q,\"object\":\"text_completion\",\"model\":\"llama-realengine\",\"choices\":[],\"usage\":{\"prompt_tokens\":%d,\"completion_tokens\":%d,\"total_tokens\":%d}}\n\n",
		id, s.Timings.PromptN, len(s.TMs), s.Timings.PromptN+len(s.TMs))
	fmt.Fprint(w, "data: [DONE]\n\n")
	_ = rc.Flush()
	return late
}

func msDur(ms float64) time.Duration { return time.Duration(ms * float64(time.Millisecond)) }

func sleepUntil(ctx context.Context, t time.Time) error {
	d := time.Until(t)
	if d <= 0 {
		return ctx.Err()
	}
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-timer.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
