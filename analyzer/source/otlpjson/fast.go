package otlpjson

import (
	"bytes"
	"encoding/json"

	du "github.com/tokentrace/tokentrace/analyzer/source/internal/decodeutil"
)

// The fast path for lines of the Collector's file exporter. encoding/json
// spends most of its time in reflection; on a line already known to be
// valid JSON, this walks the usual shape by hand and fills the same
// jsonSpan the streaming decoder fills, with the same lenient scalar
// types, so both paths convert alike. Whenever it meets something it does
// not handle exactly as encoding/json would — an unknown or repeated key
// (encoding/json matches keys without regard to case), a null, a value of
// another type — it gives up: on the line's structure before any span is
// visited (the caller then decodes the whole line the slow way), or on
// one span (that span is decoded with encoding/json). FuzzFastPath checks
// that both paths agree.

// fastState is what the fast path reuses from one line to the next.
type fastState struct {
	refs      []spanRef
	resources []fastResource
	js        jsonSpan
}

type spanRef struct {
	start, end int // the span's bytes in the line
	resource   int // index in resources
}

type fastResource struct {
	start, end int // the resource's bytes, end 0 when absent
}

// fastLine visits the spans of a valid JSON line holding a TracesData or
// an api_v3 answer. handled is false, with nothing visited, when the line
// has a shape the fast path does not handle. err is the visitor's error.
func (d *decoder) fastLine(line []byte) (handled bool, err error) {
	f := &d.fast
	f.refs, f.resources = f.refs[:0], f.resources[:0]
	p := scanner{b: line}
	if !f.tracesData(&p, 0) {
		return false, nil
	}
	if p.ws(); p.i != len(p.b) {
		return false, nil
	}
	services := make([]string, len(f.resources))
	for i, r := range f.resources {
		if r.end == 0 {
			continue
		}
		var res jsonResource
		if err := json.Unmarshal(line[r.start:r.end], &res); err != nil {
			d.skip(ReasonResourceTypes, du.Example(du.Where(d.name, d.line), "", err.Error()))
			continue
		}
		services[i] = res.service()
	}
	for _, ref := range f.refs {
		raw := line[ref.start:ref.end]
		js := &f.js
		if !js.parseFast(raw) {
			js = &jsonSpan{}
			if err := json.Unmarshal(raw, js); err != nil {
				id, _ := du.HexID(js.TraceID, 16)
				d.skip(ReasonSpanTypes, du.Example(du.Where(d.name, d.line), id, err.Error()))
				continue
			}
		}
		if err := d.emit(js, services[ref.resource], d.line); err != nil {
			return true, d.stop
		}
	}
	return true, nil
}

// tracesData records the spans of a TracesData object (or api_v3
// wrapper); false when the shape is not the usual one.
func (f *fastState) tracesData(p *scanner, depth int) bool {
	if !p.lit('{') {
		return false
	}
	found := false
	first := true
	for {
		key, done, ok := p.key(&first)
		if !ok {
			return false
		}
		if done {
			return found
		}
		switch string(key) {
		case "resourceSpans", "resource_spans":
			if found || !p.lit('[') {
				return false
			}
			found = true
			for efirst := true; ; {
				done, ok := p.elem(&efirst)
				if !ok {
					return false
				}
				if done {
					break
				}
				if !f.resourceSpans(p) {
					return false
				}
			}
		case "result":
			if found || depth > 0 || !f.tracesData(p, depth+1) {
				return false
			}
			found = true
		case "error":
			return false
		default:
			if _, ok := p.value(); !ok {
				return false
			}
		}
	}
}

func (f *fastState) resourceSpans(p *scanner) bool {
	if !p.lit('{') {
		return false
	}
	res := len(f.resources)
	f.resources = append(f.resources, fastResource{})
	seenResource := false
	for first := true; ; {
		key, done, ok := p.key(&first)
		if !ok {
			return false
		}
		if done {
			return true
		}
		switch string(key) {
		case "resource":
			if seenResource || p.peek() != '{' {
				return false
			}
			seenResource = true
			p.ws()
			start := p.i
			if _, ok := p.value(); !ok {
				return false
			}
			f.resources[res] = fastResource{start: start, end: p.i}
		case "scopeSpans", "scope_spans", "instrumentationLibrarySpans":
			if !p.lit('[') {
				return false
			}
			for efirst := true; ; {
				done, ok := p.elem(&efirst)
				if !ok {
					return false
				}
				if done {
					break
				}
				if !f.scopeSpans(p, res) {
					return false
				}
			}
		default:
			if _, ok := p.value(); !ok {
				return false
			}
		}
	}
}

func (f *fastState) scopeSpans(p *scanner, res int) bool {
	if !p.lit('{') {
		return false
	}
	for first := true; ; {
		key, done, ok := p.key(&first)
		if !ok {
			return false
		}
		if done {
			return true
		}
		if string(key) != "spans" {
			if _, ok := p.value(); !ok {
				return false
			}
			continue
		}
		if !p.lit('[') {
			return false
		}
		for efirst := true; ; {
			done, ok := p.elem(&efirst)
			if !ok {
				return false
			}
			if done {
				break
			}
			p.ws()
			start := p.i
			if _, ok := p.value(); !ok {
				return false
			}
			f.refs = append(f.refs, spanRef{start: start, end: p.i, resource: res})
		}
	}
}

// parseFast fills js (reusing its slices) from the bytes of one span
// object; false when encoding/json should decode it instead.
func (js *jsonSpan) parseFast(b []byte) bool {
	events, attrs := js.Events[:0], js.Attributes[:0]
	*js = jsonSpan{Events: events, Attributes: attrs}
	p := scanner{b: b}
	if !p.lit('{') {
		return false
	}
	var seen uint32
	for first := true; ; {
		key, done, ok := p.key(&first)
		if !ok {
			return false
		}
		if done {
			break
		}
		var bit uint32
		switch string(key) {
		case "traceId":
			bit, ok = 1<<0, p.str(&js.TraceID)
		case "spanId":
			bit, ok = 1<<1, p.str(&js.SpanID)
		case "parentSpanId":
			bit, ok = 1<<2, p.str(&js.ParentSpanID)
		case "name":
			bit, ok = 1<<3, p.str(&js.Name)
		case "kind":
			bit, ok = 1<<4, p.scalar(&js.Kind)
		case "startTimeUnixNano":
			bit, ok = 1<<5, p.scalar(&js.Start)
		case "endTimeUnixNano":
			bit, ok = 1<<6, p.scalar(&js.End)
		case "attributes":
			bit, ok = 1<<7, p.kvs(&js.Attributes)
		case "events":
			bit, ok = 1<<8, p.events(&js.Events)
		case "droppedEventsCount":
			bit, ok = 1<<9, p.scalar(&js.DroppedEvents)
		case "status":
			bit, ok = 1<<10, p.status(js)
		case "flags", "traceState", "links", "droppedAttributesCount", "droppedLinksCount":
			bit = 1 << 11
			_, ok = p.value()
			if ok {
				bit = 0 // ignored by both paths, repeats included
			}
		default:
			return false
		}
		if !ok || seen&bit != 0 {
			return false
		}
		seen |= bit
	}
	p.ws()
	return p.i == len(p.b)
}

func (p *scanner) status(js *jsonSpan) bool {
	if !p.lit('{') {
		return false
	}
	var seen uint8
	for first := true; ; {
		key, done, ok := p.key(&first)
		if !ok {
			return false
		}
		if done {
			return true
		}
		var bit uint8
		switch string(key) {
		case "code":
			bit, ok = 1, p.scalar(&js.Status.Code)
		case "message":
			bit, ok = 2, p.str(&js.Status.Message)
		default:
			return false
		}
		if !ok || seen&bit != 0 {
			return false
		}
		seen |= bit
	}
}

func (p *scanner) events(evs *[]jsonEvent) bool {
	if !p.lit('[') {
		return false
	}
	for first := true; ; {
		done, ok := p.elem(&first)
		if !ok {
			return false
		}
		if done {
			return true
		}
		e := nextElem(evs)
		*e = jsonEvent{Attributes: e.Attributes[:0]}
		if !p.lit('{') {
			return false
		}
		var seen uint8
		for kfirst := true; ; {
			key, done, ok := p.key(&kfirst)
			if !ok {
				return false
			}
			if done {
				break
			}
			var bit uint8
			switch string(key) {
			case "timeUnixNano":
				bit, ok = 1, p.scalar(&e.Time)
			case "name":
				bit, ok = 2, p.scalar(&e.Name)
			case "attributes":
				bit, ok = 4, p.kvs(&e.Attributes)
			case "droppedAttributesCount":
				_, ok = p.value()
			default:
				return false
			}
			if !ok || seen&bit != 0 {
				return false
			}
			seen |= bit
		}
	}
}

func (p *scanner) kvs(kvs *[]jsonKV) bool {
	if !p.lit('[') {
		return false
	}
	for first := true; ; {
		done, ok := p.elem(&first)
		if !ok {
			return false
		}
		if done {
			return true
		}
		kv := nextElem(kvs)
		*kv = jsonKV{}
		if !p.lit('{') {
			return false
		}
		var seen uint8
		for kfirst := true; ; {
			key, done, ok := p.key(&kfirst)
			if !ok {
				return false
			}
			if done {
				break
			}
			var bit uint8
			switch string(key) {
			case "key":
				bit, ok = 1, p.scalar(&kv.Key)
			case "value":
				bit, ok = 2, p.anyValue(&kv.Value)
			default:
				return false
			}
			if !ok || seen&bit != 0 {
				return false
			}
			seen |= bit
		}
	}
}

func (p *scanner) anyValue(a *jsonAny) bool {
	if !p.lit('{') {
		return false
	}
	var seen uint8
	for first := true; ; {
		key, done, ok := p.key(&first)
		if !ok {
			return false
		}
		if done {
			return true
		}
		var bit uint8
		switch string(key) {
		case "stringValue":
			bit, ok = 1, p.scalar(&a.StringValue)
		case "intValue":
			bit, ok = 2, p.scalar(&a.IntValue)
		case "doubleValue":
			bit, ok = 4, p.scalar(&a.DoubleValue)
		case "boolValue":
			bit, ok = 8, p.scalar(&a.BoolValue)
		case "bytesValue":
			bit, ok = 16, p.scalar(&a.BytesValue)
		case "arrayValue", "kvlistValue":
			// Rare: encoding/json decodes these few bytes.
			bit = 32
			var raw []byte
			if raw, ok = p.value(); ok && raw[0] == '{' {
				if key[0] == 'a' {
					ok = json.Unmarshal(raw, &a.ArrayValue) == nil
				} else {
					ok = json.Unmarshal(raw, &a.KvlistValue) == nil
				}
			} else {
				ok = false
			}
		default:
			return false
		}
		if !ok || seen&bit != 0 {
			return false
		}
		seen |= bit
	}
}

// scanner walks JSON already known to be valid. It still checks every
// index, so that it cannot panic whatever it is given.
type scanner struct {
	b []byte
	i int
}

func (p *scanner) ws() {
	for p.i < len(p.b) {
		switch p.b[p.i] {
		case ' ', '\t', '\n', '\r':
			p.i++
		default:
			return
		}
	}
}

func (p *scanner) peek() byte {
	p.ws()
	if p.i < len(p.b) {
		return p.b[p.i]
	}
	return 0
}

func (p *scanner) lit(c byte) bool {
	if p.peek() == c {
		p.i++
		return true
	}
	return false
}

// quoted returns the string literal at the position, quotes included, and
// whether it holds an escape.
func (p *scanner) quoted() (lit []byte, esc, ok bool) {
	if p.peek() != '"' {
		return nil, false, false
	}
	// Most strings have no escape: find the closing quote at once.
	if q := bytes.IndexByte(p.b[p.i+1:], '"'); q >= 0 {
		end := p.i + 1 + q
		if bytes.IndexByte(p.b[p.i+1:end], '\\') < 0 {
			lit = p.b[p.i : end+1]
			p.i = end + 1
			return lit, false, true
		}
	}
	for j := p.i + 1; j < len(p.b); j++ {
		switch p.b[j] {
		case '"':
			lit = p.b[p.i : j+1]
			p.i = j + 1
			return lit, esc, true
		case '\\':
			esc = true
			j++
		}
	}
	return nil, false, false
}

// value skips the value at the position and returns its bytes (a null
// is refused: encoding/json gives it meanings of its own).
func (p *scanner) value() ([]byte, bool) {
	p.ws()
	if p.i >= len(p.b) {
		return nil, false
	}
	start := p.i
	switch p.b[p.i] {
	case '"':
		_, _, ok := p.quoted()
		return p.b[start:p.i], ok
	case '{', '[':
		depth := 0
		for p.i < len(p.b) {
			switch p.b[p.i] {
			case '"':
				if _, _, ok := p.quoted(); !ok {
					return nil, false
				}
				continue
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					p.i++
					return p.b[start:p.i], true
				}
			}
			p.i++
		}
		return nil, false
	case 'n':
		return nil, false
	}
	for p.i < len(p.b) {
		switch p.b[p.i] {
		case ',', '}', ']', ' ', '\t', '\n', '\r':
			return p.b[start:p.i], true
		}
		p.i++
	}
	return p.b[start:p.i], true
}

// key reads the next key of an object whose '{' was read; done at '}'.
func (p *scanner) key(first *bool) (key []byte, done, ok bool) {
	if p.lit('}') {
		return nil, true, true
	}
	if !*first && !p.lit(',') {
		return nil, false, false
	}
	*first = false
	lit, esc, ok := p.quoted()
	if !ok || esc || !p.lit(':') {
		return nil, false, false
	}
	return lit[1 : len(lit)-1], false, true
}

// elem moves to the next element of an array whose '[' was read; done at
// ']'.
func (p *scanner) elem(first *bool) (done, ok bool) {
	if p.lit(']') {
		return true, true
	}
	if !*first && !p.lit(',') {
		return false, false
	}
	*first = false
	return false, true
}

// str reads a string into s as encoding/json would.
func (p *scanner) str(s *string) bool {
	lit, _, ok := p.quoted()
	if !ok {
		return false
	}
	v, err := du.Unquote(lit)
	*s = v
	return err == nil
}

// scalar reads a literal into one of the lenient types with its own
// UnmarshalJSON, as encoding/json would.
func (p *scanner) scalar(u json.Unmarshaler) bool {
	v, ok := p.value()
	return ok && u.UnmarshalJSON(v) == nil
}

// nextElem extends *s by one element, reusing its capacity (and what the
// element held, which the caller resets), and returns the new element.
func nextElem[T any](s *[]T) *T {
	n := len(*s)
	if n < cap(*s) {
		*s = (*s)[:n+1]
	} else {
		var zero T
		*s = append(*s, zero)
	}
	return &(*s)[n]
}
