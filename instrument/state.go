package instrument

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/tokentrace/tokentrace/instrument/internal/ssestream"
	"github.com/tokentrace/tokentrace/semconv"
)

// reqState is the record of one traced request: its span, its token clock
// and the engine events that reached it. The token fields are written only
// by the goroutine that moves the response bytes; engine events may arrive
// from any goroutine and are guarded by mu.
type reqState struct {
	cfg      *config
	span     trace.Span
	spanCtx  trace.SpanContext
	start    time.Time // span start; carries the monotonic clock
	info     RequestInfo
	class    Classification
	ordinal  int64
	instance string
	instOrd  int64
	admitted bool
	kind     trace.SpanKind

	// Response.
	rw        respWriter // the gateway's writer, wrapped (Handler only)
	status    int
	sse       bool // response parsed as SSE
	decided   bool // sse decided from the response headers
	nonStream []byte
	writeErr  error
	failure   string // error.type of a failure to reach or read the engine
	broken    bool   // observation stopped after an internal fault

	// Token clock.
	parser    ssestream.Parser
	nowOff    time.Duration // when the bytes being observed were written, since start; -1 until read
	offsets   *[]time.Duration
	counts    []uint32 // nil while every chunk carried one token
	chunks    int
	tokens    int
	untimed   int
	usageSeen int // last cumulative usage.completion_tokens seen on a token chunk
	first     time.Duration
	last      time.Duration

	// What the stream said about itself.
	done          bool
	errorChunk    bool
	usage         bool
	promptTokens  int
	outputTokens  int
	respModel     string
	respID        string
	finishReasons []string

	mu       sync.Mutex
	engine   []engineEvent
	finished bool

	// Storage for what would otherwise be allocated per request.
	ctx        stateCtx
	body       bufferedBody
	startOpts  [3]trace.SpanStartOption
	startAttrs [12]attribute.KeyValue
	finishArr  [1]string
}

var offsetsPool = sync.Pool{New: func() any { s := make([]time.Duration, 0, 1024); return &s }}

// newState returns the state of a request that arrived at start; the
// caller fills st.info (readRequestInfo) and starts the span (startSpan).
func newState(cfg *config, kind trace.SpanKind, start time.Time) *reqState {
	st := &reqState{
		cfg:     cfg,
		kind:    kind,
		start:   start,
		ordinal: cfg.tracker.nextOrdinal(),
		offsets: offsetsPool.Get().(*[]time.Duration),
	}
	st.finishReasons = st.finishArr[:0]
	return st
}

var (
	serverKind = trace.WithSpanKind(trace.SpanKindServer)
	clientKind = trace.WithSpanKind(trace.SpanKindClient)
)

// startSpan starts st's span as a child of ctx and returns the span's
// context. The options and attributes are built in st's own arrays: the
// SDK copies the attributes and keeps no option.
func (st *reqState) startSpan(ctx context.Context, tracer trace.Tracer, names *spanNames, r *http.Request) context.Context {
	kind := serverKind
	if st.kind == trace.SpanKindClient {
		kind = clientKind
	}
	st.startOpts = [3]trace.SpanStartOption{
		kind,
		trace.WithTimestamp(st.start),
		trace.WithAttributes(st.startAttributes(r)...),
	}
	ctx, span := tracer.Start(ctx, names.of(st.info), st.startOpts[:]...)
	st.span, st.spanCtx = span, span.SpanContext()
	return ctx
}

// spanName follows the GenAI conventions: "{operation} {model}".
func spanName(info RequestInfo) string {
	if info.Model == "" {
		return info.Operation
	}
	return info.Operation + " " + info.Model
}

// spanNames remembers the last span name built, since a gateway mostly
// serves the same model and operation over and over.
type spanNames struct{ last atomic.Pointer[spanNameEntry] }

type spanNameEntry struct{ op, model, name string }

func (n *spanNames) of(info RequestInfo) string {
	if e := n.last.Load(); e != nil && e.op == info.Operation && e.model == info.Model {
		return e.name
	}
	name := spanName(info)
	n.last.Store(&spanNameEntry{op: info.Operation, model: info.Model, name: name})
	return name
}

// startAttributes are known when the request arrives.
func (st *reqState) startAttributes(r *http.Request) []attribute.KeyValue {
	a := st.startAttrs[:0]
	a = append(a,
		semconv.SchemaVersionKey.String(semconv.SchemaVersion),
		semconv.GenAIOperationName.String(st.info.Operation),
		semconv.GenAIProviderName.String(st.cfg.providerName),
		semconv.GenAIRequestStream.Bool(st.info.Stream),
		semconv.HTTPRequestMethod.String(r.Method),
		semconv.URLPath.String(r.URL.Path),
		semconv.Ordinal.Int64(st.ordinal),
	)
	if st.info.Model != "" {
		a = append(a, semconv.GenAIRequestModel.String(st.info.Model))
	}
	if st.info.MaxTokens > 0 {
		a = append(a, semconv.GenAIRequestMaxTokens.Int(st.info.MaxTokens))
	}
	if st.info.PromptChars > 0 {
		a = append(a, semconv.PromptChars.Int(st.info.PromptChars))
	}
	if st.class.PromptType != "" {
		a = append(a, semconv.PromptType.String(st.class.PromptType))
	}
	if st.class.ModelVersion != "" {
		a = append(a, semconv.ModelVersion.String(st.class.ModelVersion))
	}
	return a
}

// setInstance admits the request on its engine instance, once.
func (st *reqState) setInstance(instance string) {
	if st.admitted {
		return
	}
	st.admitted = true
	st.instance = instance
	st.instOrd = st.cfg.tracker.admit(st, instance)
	// The instance attributes are written with the others when the span
	// is completed, off the request path.
}

// instanceAttributes appends the attributes naming st's engine instance.
func (st *reqState) instanceAttributes(a []attribute.KeyValue) []attribute.KeyValue {
	if !st.admitted {
		return a
	}
	a = append(a,
		semconv.Instance.String(st.instance),
		semconv.InstanceOrdinal.Int64(st.instOrd))
	if host, port, err := net.SplitHostPort(st.instance); err == nil {
		a = append(a, semconv.ServerAddress.String(host))
		if p, err := strconv.Atoi(port); err == nil {
			a = append(a, semconv.ServerPort.Int(p))
		}
	}
	return a
}

// matches reports whether st is the request named by a trace id or an
// engine request id (which for OpenAI-compatible engines is the response id).
func (st *reqState) matches(tid trace.TraceID, rid string) bool {
	if tid.IsValid() && st.spanCtx.TraceID() == tid {
		return true
	}
	if rid == "" {
		return false
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	return st.respID == rid
}

func (st *reqState) addEngineEvent(ev engineEvent) {
	st.mu.Lock()
	if !st.finished && len(st.engine) < maxEngineEvents {
		st.engine = append(st.engine, ev)
	}
	st.mu.Unlock()
}

// maxEngineEvents bounds the engine events kept per request.
const maxEngineEvents = 4096

// decide chooses, from the response headers, whether the body is an SSE
// stream to time or a JSON body to read usage from.
func (st *reqState) decide(h http.Header, status int) {
	if st.decided {
		return
	}
	st.decided = true
	if status == 0 {
		status = http.StatusOK
	}
	st.status = status
	ct := h.Get("Content-Type")
	st.sse = containsFold(ct, "text/event-stream") || (st.info.Stream && ct == "")
}

// observe feeds response bytes to the clock. It never panics: a fault in
// the parser stops observation of this request and nothing else.
func (st *reqState) observe(p []byte) {
	if st.broken || len(p) == 0 {
		return
	}
	defer func() {
		if recover() != nil {
			st.broken = true
		}
	}()
	if !st.sse {
		if room := st.cfg.maxRespBody - len(st.nonStream); room > 0 {
			st.nonStream = append(st.nonStream, p[:min(room, len(p))]...)
		}
		return
	}
	st.nowOff = -1 // read on the first token of these bytes, by token
	st.parser.Feed(p, st)
	if st.nowOff < 0 && p[len(p)-1] != '\n' {
		// A partial line is left for later bytes or for parser.Close,
		// which stamps it with the time of these bytes, the last seen.
		st.nowOff = time.Since(st.start)
	}
}

// OnChunk implements ssestream.Sink: one data line of the stream.
func (st *reqState) OnChunk(c *ssestream.Chunk) {
	if c.Done {
		st.done = true
		return
	}
	if c.Error {
		st.errorChunk = true
	}
	if c.Model != nil && st.respModel == "" {
		if string(c.Model) == st.info.Model {
			st.respModel = st.info.Model // no copy for the usual case
		} else {
			st.respModel = string(c.Model)
		}
	}
	if c.ID != nil && st.respID == "" {
		st.mu.Lock()
		st.respID = string(c.ID)
		st.mu.Unlock()
	}
	if c.FinishReason != nil {
		st.addFinishReason(c.FinishReason)
	}
	k := 0
	if c.Tokens > 0 {
		k = 1
		// vLLM's continuous usage stats give the true count per chunk.
		if c.HasUsage && c.CompletionTokens > st.usageSeen {
			k = c.CompletionTokens - st.usageSeen
		}
	}
	if c.HasUsage {
		st.usage = true
		st.promptTokens = c.PromptTokens
		st.outputTokens = c.CompletionTokens
		if c.Tokens > 0 {
			st.usageSeen = c.CompletionTokens
		}
	}
	if k > 0 {
		st.token(k)
	}
}

func (st *reqState) addFinishReason(b []byte) {
	for _, r := range st.finishReasons {
		if r == string(b) {
			return
		}
	}
	if len(st.finishReasons) < 8 {
		st.finishReasons = append(st.finishReasons, finishReason(b))
	}
}

// finishReason returns b as a string, without a copy for the reasons
// OpenAI-compatible servers send.
func finishReason(b []byte) string {
	switch string(b) {
	case "stop":
		return "stop"
	case "length":
		return "length"
	case "tool_calls":
		return "tool_calls"
	case "content_filter":
		return "content_filter"
	case "function_call":
		return "function_call"
	case "abort":
		return "abort"
	}
	return string(b)
}

// token records a chunk carrying k tokens, written now.
func (st *reqState) token(k int) {
	off := st.nowOff
	if off < 0 {
		// The monotonic clock alone: time.Since reads only it, where
		// time.Now reads the wall clock too (about twice the cost). Wall
		// times are rebuilt as start+offset when the span is completed.
		// Read once per Write, and only for a Write that completes a
		// token-bearing chunk.
		off = time.Since(st.start)
		st.nowOff = off
	}
	if st.chunks == 0 {
		st.first = off
		if st.admitted {
			st.cfg.tracker.prefillDone(st, off)
		}
	}
	st.last = off
	st.chunks++
	st.tokens += k
	offs := *st.offsets
	if len(offs) >= st.cfg.maxChunks {
		st.untimed++
		return
	}
	if k != 1 && st.counts == nil {
		st.counts = make([]uint32, len(offs), cap(offs))
		for i := range st.counts {
			st.counts[i] = 1
		}
	}
	if st.counts != nil {
		st.counts = append(st.counts, uint32(k))
	}
	*st.offsets = append(offs, off)
}

// finish ends the request: it stops accepting engine events, and hands the
// span to the finisher, which writes the token events off the request path.
func (st *reqState) finish(end time.Time, ctxErr error) {
	if st.sse {
		st.parser.Close(st)
	}
	if st.admitted {
		st.cfg.tracker.remove(st, st.instance)
	}
	st.mu.Lock()
	st.finished = true
	st.mu.Unlock()
	finishers.submit(st, end, ctxErr)
}

// outcome classifies how the response ended.
func (st *reqState) outcome(ctxErr error) string {
	switch {
	case st.status >= 400 || st.errorChunk || st.failure != "":
		return semconv.OutcomeUpstreamError
	case st.writeErr != nil || (ctxErr != nil && !st.done):
		return semconv.OutcomeClientDisconnect
	case !st.sse:
		return semconv.OutcomeNotStreamed
	case st.done || len(st.finishReasons) > 0:
		return semconv.OutcomeComplete
	}
	return semconv.OutcomeTruncated
}

// complete writes everything onto the span and ends it. withEvents is false
// when the finisher is overloaded and only the compact times are written.
func (st *reqState) complete(end time.Time, ctxErr error, withEvents bool) {
	span := st.span
	outcome := st.outcome(ctxErr)
	if !st.sse && len(st.nonStream) > 0 {
		st.readNonStream()
	}
	a := make([]attribute.KeyValue, 0, 32)
	a = st.instanceAttributes(a)
	a = append(a, semconv.StreamOutcome.String(outcome))
	if st.status != 0 {
		a = append(a, semconv.HTTPResponseStatus.Int(st.status))
	}
	if st.respModel != "" {
		a = append(a, semconv.GenAIResponseModel.String(st.respModel))
	}
	if st.respID != "" {
		a = append(a, semconv.GenAIResponseID.String(st.respID))
	}
	if len(st.finishReasons) > 0 {
		a = append(a, semconv.GenAIResponseFinishReasons.StringSlice(st.finishReasons))
	}
	if st.usage {
		a = append(a, semconv.GenAIUsageInputTokens.Int(st.promptTokens),
			semconv.GenAIUsageOutputTokens.Int(st.outputTokens))
	}
	tokens := st.tokens
	if st.usage && st.outputTokens > 0 {
		tokens = st.outputTokens
	}
	offs := *st.offsets
	if st.sse {
		a = append(a,
			semconv.Tokens.Int(tokens),
			semconv.TokensEstimated.Bool(!st.usage || st.outputTokens == 0),
			semconv.Chunks.Int(st.chunks))
		if st.untimed > 0 {
			a = append(a, semconv.ChunksUntimed.Int(st.untimed))
		}
		if st.parser.MalformedLines > 0 {
			a = append(a, semconv.MalformedChunks.Int(st.parser.MalformedLines))
		}
		if st.parser.OversizedLines > 0 {
			a = append(a, semconv.OversizedLines.Int(st.parser.OversizedLines))
		}
	}
	if st.chunks > 0 {
		a = append(a,
			semconv.TTFTMillis.Float64(millis(st.first)),
			semconv.GenAIResponseTimeToFirstChunk.Float64(st.first.Seconds()))
		if tokens > 1 {
			a = append(a, semconv.TPOTMillis.Float64(millis(st.last-st.first)/float64(tokens-1)))
		}
		if st.cfg.recording.compact() {
			a = append(a, semconv.TokenTimes.String(encodeTimes(offs)))
			if st.counts != nil {
				a = append(a, semconv.TokenCounts.String(encodeCounts(st.counts)))
			}
		}
	}
	if st.cfg.recording.events() && !withEvents && len(offs) > 0 {
		a = append(a, semconv.TokenEventsDropped.Bool(true))
	}
	switch {
	case outcome == semconv.OutcomeUpstreamError:
		et := "upstream_error"
		switch {
		case st.failure != "":
			et = st.failure
		case st.status >= 400:
			et = strconv.Itoa(st.status)
		}
		a = append(a, semconv.ErrorType.String(et))
		span.SetStatus(codes.Error, fmt.Sprintf("upstream answered %s", et))
	case outcome == semconv.OutcomeClientDisconnect:
		a = append(a, semconv.ErrorType.String("client_disconnect"))
		span.SetStatus(codes.Error, "client went away mid-response")
	case outcome == semconv.OutcomeTruncated:
		a = append(a, semconv.ErrorType.String("stream_truncated"))
		span.SetStatus(codes.Error, "stream ended without [DONE] or a finish reason")
	}
	span.SetAttributes(a...)

	if withEvents && st.cfg.recording.events() {
		st.addTokenEvents(span, offs)
	}
	// Engine events go last: the SDK drops the oldest events past its
	// limit, and these are the few that no other attribute keeps.
	st.mu.Lock()
	engine := st.engine
	st.engine = nil
	st.mu.Unlock()
	for _, ev := range engine {
		span.AddEvent(ev.name, trace.WithTimestamp(ev.at), trace.WithAttributes(ev.attrs...))
	}
	span.End(trace.WithTimestamp(end))
	st.recordMetrics(end, ctxErr) // metrics.go; before the offsets are recycled

	*st.offsets = offs[:0]
	offsetsPool.Put(st.offsets)
	st.offsets = nil
}

// addTokenEvents writes one event per timed chunk. The option slice, the
// attribute slices and the attribute options are made once and refilled
// for each event: the SDK keeps none of them (trace.NewEventConfig appends
// the attributes to a slice of its own, and the options are only read), so
// each event costs the boxed timestamp plus what the SDK allocates itself.
func (st *reqState) addTokenEvents(span trace.Span, offs []time.Duration) {
	var kv [3]attribute.KeyValue // [0]: index of a 1-token chunk; [1:3]: index and count
	one := trace.WithAttributes(kv[0:1]...)
	many := trace.WithAttributes(kv[1:3]...)
	opts := make([]trace.EventOption, 2)
	idx := 0
	for i, off := range offs {
		k := 1
		if st.counts != nil {
			k = int(st.counts[i])
		}
		opts[0] = trace.WithTimestamp(st.start.Add(off))
		if k == 1 {
			kv[0] = semconv.TokenIndex.Int(idx)
			opts[1] = one
		} else {
			kv[1], kv[2] = semconv.TokenIndex.Int(idx), semconv.TokenCount.Int(k)
			opts[1] = many
		}
		span.AddEvent(semconv.TokenEvent, opts...)
		idx += k
	}
}

func (st *reqState) readNonStream() {
	var rb responseBody
	if json.Unmarshal(st.nonStream, &rb) != nil {
		return
	}
	st.respModel, st.respID = rb.Model, rb.ID
	for _, c := range rb.Choices {
		if c.FinishReason != "" {
			st.addFinishReason([]byte(c.FinishReason))
		}
	}
	if rb.Usage != nil {
		st.usage = true
		st.promptTokens, st.outputTokens = rb.Usage.PromptTokens, rb.Usage.CompletionTokens
	}
}

type stateKey struct{}

// withState returns ctx carrying st, as context.WithValue would, but
// without allocating: the context lives in st.
func withState(ctx context.Context, st *reqState) context.Context {
	st.ctx = stateCtx{Context: ctx, st: st}
	return &st.ctx
}

type stateCtx struct {
	context.Context
	st *reqState
}

func (c *stateCtx) Value(key any) any {
	if key == (stateKey{}) {
		return c.st
	}
	return c.Context.Value(key)
}

func stateFrom(ctx context.Context) *reqState {
	st, _ := ctx.Value(stateKey{}).(*reqState)
	return st
}

func containsFold(s, sub string) bool {
	for i := 0; i+len(sub) <= len(s); i++ {
		if equalFoldASCII(s[i:i+len(sub)], sub) {
			return true
		}
	}
	return false
}

func equalFoldASCII(a, b string) bool {
	for i := 0; i < len(a); i++ {
		x, y := a[i], b[i]
		if 'A' <= x && x <= 'Z' {
			x += 'a' - 'A'
		}
		if x != y {
			return false
		}
	}
	return true
}
