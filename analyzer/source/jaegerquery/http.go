package jaegerquery

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/tokentrace/tokentrace/analyzer/model"
	"github.com/tokentrace/tokentrace/analyzer/source"
	"github.com/tokentrace/tokentrace/analyzer/source/jaegerjson"
	"github.com/tokentrace/tokentrace/analyzer/source/otlpjson"
)

// httpBackend speaks Jaeger's HTTP query APIs: api_v3
// (/api/v3/traces, OTLP JSON wrapped in {"result": ...}) or, for older
// Jaegers, the UI's legacy API (/api/traces, the UI's JSON).
type httpBackend struct {
	client *http.Client
	base   *url.URL // scheme, host and any base path
	token  string
	legacy bool
}

func (b *httpBackend) protocol() Protocol {
	if b.legacy {
		return HTTPLegacy
	}
	return HTTPv3
}

// do GETs base+path?q and returns the answer; the caller closes its body.
func (b *httpBackend) do(ctx context.Context, path string, q url.Values) (*http.Response, error) {
	u := b.base.JoinPath(path)
	u.RawQuery = q.Encode()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "application/json")
	if b.token != "" {
		req.Header.Set("Authorization", "Bearer "+b.token)
	}
	return b.client.Do(req)
}

// statusError reads the start of a failed answer's body.
func (b *httpBackend) statusError(resp *http.Response) error {
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
	text := strings.Join(strings.Fields(string(body)), " ")
	if b.token != "" {
		text = strings.ReplaceAll(text, b.token, "[REDACTED]")
	}
	return &httpStatusError{Code: resp.StatusCode, Body: text}
}

func drain(resp *http.Response) {
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	resp.Body.Close()
}

// probe tells api_v3 from the legacy API: /api/v3/services answers 200
// on a Jaeger that serves api_v3 over HTTP and 404 on an older one, which
// must then answer /api/services.
func (b *httpBackend) probe(ctx context.Context) error {
	_, err := b.services(ctx)
	return err
}

// errNoV3 is the answer of a Jaeger without api_v3 over HTTP.
type errNoV3 struct{ err error }

func (e errNoV3) Error() string { return e.err.Error() }

func (b *httpBackend) services(ctx context.Context) ([]string, error) {
	path := "api/v3/services"
	if b.legacy {
		path = "api/services"
	}
	resp, err := b.do(ctx, path, nil)
	if err != nil {
		return nil, err
	}
	defer drain(resp)
	if resp.StatusCode != http.StatusOK {
		err := b.statusError(resp)
		if resp.StatusCode == http.StatusNotFound && !b.legacy {
			return nil, errNoV3{err}
		}
		return nil, err
	}
	var v struct {
		Services []string `json:"services"` // api_v3
		Data     []string `json:"data"`     // legacy
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, 64<<20)).Decode(&v); err != nil {
		return nil, fmt.Errorf("services answer: %w", err)
	}
	names := append(v.Services, v.Data...)
	sort.Strings(names)
	return names, nil
}

func (b *httpBackend) find(ctx context.Context, s search, k sink) (int, error) {
	q := url.Values{}
	var path, name string
	if b.legacy {
		path = "api/traces"
		q.Set("service", s.service)
		if s.operation != "" {
			q.Set("operation", s.operation)
		}
		// Microseconds; the end rounded up so the window stays inclusive.
		q.Set("start", strconv.FormatInt(s.start.UnixMicro(), 10))
		q.Set("end", strconv.FormatInt(s.end.Add(time.Microsecond-1).UnixMicro(), 10))
		q.Set("limit", strconv.Itoa(s.depth))
		if s.minDur > 0 {
			q.Set("minDuration", s.minDur.String())
		}
		if s.maxDur > 0 {
			q.Set("maxDuration", s.maxDur.String())
		}
		if len(s.attrs) > 0 {
			tags, _ := json.Marshal(s.attrs)
			q.Set("tags", string(tags))
		}
		q.Set("raw", "true")
	} else {
		path = "api/v3/traces"
		q.Set("query.service_name", s.service)
		if s.operation != "" {
			q.Set("query.operation_name", s.operation)
		}
		q.Set("query.start_time_min", s.start.UTC().Format(time.RFC3339Nano))
		q.Set("query.start_time_max", s.end.UTC().Format(time.RFC3339Nano))
		q.Set("query.num_traces", strconv.Itoa(s.depth))
		if s.minDur > 0 {
			q.Set("query.duration_min", s.minDur.String())
		}
		if s.maxDur > 0 {
			q.Set("query.duration_max", s.maxDur.String())
		}
		q.Set("query.raw_traces", "true")
	}
	name = fmt.Sprintf("GET /%s %s %s..%s", path, s.service, s.start.UTC().Format(time.RFC3339Nano), s.end.UTC().Format(time.RFC3339Nano))
	resp, err := b.do(ctx, path, q)
	if err != nil {
		return 0, err
	}
	defer drain(resp)
	switch resp.StatusCode {
	case http.StatusOK:
	case http.StatusNotFound:
		return 0, nil // api_v3: "No traces found"
	default:
		return 0, b.statusError(resp)
	}
	var tc traceCounter
	emit := tc.counting(k.emit)
	var flush func() error
	if !b.legacy && len(s.attrs) > 0 {
		// api_v3 over HTTP has no attribute filter: keep the traces one
		// of whose spans has them all, as Jaeger's search does.
		f := &attrFilter{attrs: s.attrs, service: s.service, emit: emit}
		emit, flush = f.add, f.flush
	}
	if b.legacy {
		err = jaegerjson.Decode(resp.Body, name, emit, k.skip)
	} else {
		err = otlpjson.Decode(resp.Body, name, emit, k.skip)
	}
	if err == nil && flush != nil {
		err = flush()
	}
	return tc.n(), bodyErr(err)
}

// bodyErr marks a body that broke off as retryable.
func bodyErr(err error) error {
	if err == io.ErrUnexpectedEOF {
		return fmt.Errorf("%w: %v", errTruncatedBody, err)
	}
	return err
}

func (b *httpBackend) get(ctx context.Context, id string, start, end time.Time, k sink) (bool, error) {
	q := url.Values{}
	var path string
	if b.legacy {
		path = "api/traces/" + id
		if !start.IsZero() {
			q.Set("start", strconv.FormatInt(start.UnixMicro(), 10))
		}
		if !end.IsZero() {
			q.Set("end", strconv.FormatInt(end.Add(time.Microsecond-1).UnixMicro(), 10))
		}
		q.Set("raw", "true")
	} else {
		path = "api/v3/traces/" + id
		if !start.IsZero() {
			q.Set("start_time", start.UTC().Format(time.RFC3339Nano))
		}
		if !end.IsZero() {
			q.Set("end_time", end.UTC().Format(time.RFC3339Nano))
		}
		q.Set("raw_traces", "true")
	}
	resp, err := b.do(ctx, path, q)
	if err != nil {
		return false, err
	}
	defer drain(resp)
	switch resp.StatusCode {
	case http.StatusOK:
	case http.StatusNotFound:
		return false, nil
	default:
		return false, b.statusError(resp)
	}
	var tc traceCounter
	emit := tc.counting(k.emit)
	name := "GET /" + path
	if b.legacy {
		err = jaegerjson.Decode(resp.Body, name, emit, k.skip)
	} else {
		err = otlpjson.Decode(resp.Body, name, emit, k.skip)
	}
	return tc.n() > 0, bodyErr(err)
}

// attrFilter passes on the traces that have a span with every attribute
// (as a span or event attribute, compared as text). Jaeger's answer
// holds each trace's spans together, so one trace is held at a time.
type attrFilter struct {
	attrs   map[string]string
	service string
	emit    func(*model.Span) error
	trace   string
	held    []*model.Span
	match   bool
}

func (f *attrFilter) add(s *model.Span) error {
	if s.TraceID != f.trace {
		if err := f.flush(); err != nil {
			return err
		}
		f.trace = s.TraceID
	}
	if f.match {
		return f.emit(s)
	}
	if spanMatches(s, f.service, f.attrs) {
		f.match = true
		for _, h := range f.held {
			if err := f.emit(h); err != nil {
				return err
			}
		}
		f.held = f.held[:0]
		return f.emit(s)
	}
	f.held = append(f.held, source.Clone(s))
	return nil
}

func (f *attrFilter) flush() error {
	f.held, f.match, f.trace = f.held[:0], false, ""
	return nil
}

// spanMatches reports whether s is of service (when set) and has every
// attribute, on the span or on one of its events.
func spanMatches(s *model.Span, service string, attrs map[string]string) bool {
	if service != "" && s.Service != service {
		return false
	}
	for k, want := range attrs {
		if v, ok := s.Attrs[k]; ok && attrText(v) == want {
			continue
		}
		found := false
		for i := range s.Events {
			if v, ok := s.Events[i].Attrs[k]; ok && attrText(v) == want {
				found = true
				break
			}
		}
		if !found {
			return false
		}
	}
	return true
}

func attrText(v any) string {
	if s, ok := v.(string); ok {
		return s
	}
	return fmt.Sprint(v)
}
