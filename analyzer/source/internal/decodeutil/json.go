package decodeutil

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"unicode/utf8"
)

// ErrTooLong is what Reader returns once a unit exceeds its budget.
var ErrTooLong = errors.New("value too long")

// Reader feeds a json.Decoder from a bufio.Reader. It counts lines, bounds
// how many bytes one unit (what is read after Mark) may take, and keeps
// the first I/O error of the underlying reader apart from JSON errors so
// that callers can tell I/O failures (fatal) from bad input (skipped).
type Reader struct {
	br  *bufio.Reader
	eof bool // the underlying reader is exhausted
	err error

	limit, used int64
	tooLong     bool

	newlines int // '\n' delivered so far
}

// NewReader returns a Reader over br.
func NewReader(br *bufio.Reader) *Reader {
	return &Reader{br: br, limit: MaxValueBytes}
}

// Read implements io.Reader.
func (r *Reader) Read(p []byte) (int, error) {
	if r.err != nil {
		return 0, r.err
	}
	if r.tooLong {
		return 0, ErrTooLong
	}
	if r.eof {
		return 0, io.EOF
	}
	if len(p) == 0 {
		return 0, nil
	}
	// Read no further than one byte past the budget, so that a unit over
	// it is caught however far the decoder reads ahead.
	if room := r.limit - r.used + 1; int64(len(p)) > room {
		p = p[:room]
	}
	n, err := r.br.Read(p)
	r.newlines += bytes.Count(p[:n], nlByte)
	r.used += int64(n)
	if r.used > r.limit {
		r.tooLong = true
	}
	switch {
	case err == io.EOF:
		r.eof = true
	case err != nil:
		r.err = err
	}
	return n, err
}

var nlByte = []byte{'\n'}

// Mark starts a new unit: the budget of MaxValueBytes counts from here.
func (r *Reader) Mark() { r.used = 0 }

// Err returns the first error of the underlying reader (not io.EOF).
func (r *Reader) Err() error { return r.err }

// TooLong reports whether the current unit exceeded its budget.
func (r *Reader) TooLong() bool { return r.tooLong }

// Limit is the budget of one unit.
func (r *Reader) Limit() int64 { return r.limit }

// Line returns the line number of dec's position — of the next value,
// past white space and a separating comma — counted from the newlines
// delivered minus those dec has buffered beyond that value's start.
func (r *Reader) Line(dec *json.Decoder) int {
	var c nlCounter
	if br, ok := dec.Buffered().(io.WriterTo); ok {
		_, _ = br.WriteTo(&c)
	}
	return 1 + r.newlines - c.n
}

type nlCounter struct{ n int }

func (c *nlCounter) Write(p []byte) (int, error) {
	i := 0
	for i < len(p) && (p[i] == ' ' || p[i] == '\t' || p[i] == '\r' || p[i] == '\n' || p[i] == ',') {
		i++
	}
	c.n += bytes.Count(p[i:], nlByte)
	return len(p), nil
}

// ReadLine reads the next line of br, without its line feed, into
// buf[:0]. A line longer than limit is discarded to its end and reported
// with tooLong. err is io.EOF when no line is left, else an I/O error.
func ReadLine(br *bufio.Reader, buf []byte, limit int64) (line []byte, tooLong bool, err error) {
	line = buf[:0]
	got := false
	for {
		s, err := br.ReadSlice('\n')
		got = got || len(s) > 0
		if !tooLong {
			if int64(len(line)+len(s)) > limit+1 {
				tooLong, line = true, buf[:0]
			} else {
				line = append(line, s...)
			}
		}
		switch err {
		case bufio.ErrBufferFull:
			continue
		case nil:
			return bytes.TrimSuffix(line, nlByte), tooLong, nil
		case io.EOF:
			if !got {
				return nil, false, io.EOF
			}
			return line, tooLong, nil
		default:
			return nil, false, err
		}
	}
}

// Unexpected turns io.EOF met inside a value into io.ErrUnexpectedEOF:
// json.Decoder.Token reports a truncated document as a plain io.EOF.
func Unexpected(err error) error {
	if err == io.EOF {
		return io.ErrUnexpectedEOF
	}
	return err
}

// Close reads the closing delimiter of the current object or array.
func Close(dec *json.Decoder) error {
	_, err := dec.Token()
	return Unexpected(err)
}

// Recoverable reports whether err, returned by json.Decoder.Decode, left
// the decoder positioned after the value (wrong types), so decoding can go
// on; syntax errors, truncation and reader errors are not recoverable.
func Recoverable(err error) bool {
	var te *json.UnmarshalTypeError
	var ve *ValueError
	return errors.As(err, &te) || errors.As(err, &ve)
}

// ValueError is returned by the lenient scalar types for values they
// cannot read.
type ValueError struct{ Msg string }

func (e *ValueError) Error() string { return e.Msg }

func valueErr(what string, b []byte) error {
	return &ValueError{Msg: fmt.Sprintf("cannot read %s from %s", what, Truncate(string(b), 40))}
}

// SkipValue reads and discards the next value.
func SkipValue(dec *json.Decoder) error {
	var raw json.RawMessage
	return Unexpected(dec.Decode(&raw))
}

// SkipRest discards the rest of an object or array whose opening
// delimiter was just read.
func SkipRest(dec *json.Decoder) error {
	depth := 1
	for depth > 0 {
		tok, err := dec.Token()
		if err != nil {
			return Unexpected(err)
		}
		if d, ok := tok.(json.Delim); ok {
			switch d {
			case '{', '[':
				depth++
			default:
				depth--
			}
		}
	}
	return nil
}

// Open reads the next value's first token and reports whether it opens
// the wanted kind ('{' or '['). Otherwise the whole value is skipped and
// got says what it was ("a string", "an object", ...).
func Open(dec *json.Decoder, want json.Delim) (ok bool, got string, err error) {
	tok, err := dec.Token()
	if err != nil {
		return false, "", Unexpected(err)
	}
	if d, isDelim := tok.(json.Delim); isDelim {
		if d == want {
			return true, "", nil
		}
		if d == '{' || d == '[' {
			if err := SkipRest(dec); err != nil {
				return false, "", err
			}
		}
		if d == '{' {
			return false, "an object", nil
		}
		return false, "an array", nil
	}
	return false, Describe(tok), nil
}

// Elems reads an array, calling elem for each element (elem reads it).
// When the value is not an array it is skipped and got names what it was
// ("an object", "a string", ...); got is "" for an array.
func Elems(dec *json.Decoder, elem func() error) (got string, err error) {
	ok, got, err := Open(dec, '[')
	if !ok || err != nil {
		return got, err
	}
	for dec.More() {
		if err := elem(); err != nil {
			return "", err
		}
	}
	return "", Close(dec)
}

// Fields reads an object, calling field with each key (field reads the
// value). When the value is not an object it is skipped and got names
// what it was; got is "" for an object.
func Fields(dec *json.Decoder, field func(key string) error) (got string, err error) {
	ok, got, err := Open(dec, '{')
	if !ok || err != nil {
		return got, err
	}
	for {
		key, more, err := Key(dec)
		if err != nil || !more {
			return "", err
		}
		if err := field(key); err != nil {
			return "", err
		}
	}
}

// Describe names the kind of a JSON token for messages.
func Describe(tok json.Token) string {
	switch tok.(type) {
	case string:
		return "a string"
	case float64, json.Number:
		return "a number"
	case bool:
		return "a boolean"
	case nil:
		return "null"
	}
	return "a value"
}

// Key reads the next object key, or returns ok false at the object's end
// (having consumed the closing brace).
func Key(dec *json.Decoder) (key string, ok bool, err error) {
	tok, err := dec.Token()
	if err != nil {
		return "", false, Unexpected(err)
	}
	if k, isKey := tok.(string); isKey {
		return k, true, nil
	}
	return "", false, nil
}

// TrimSpaceBOM drops a UTF-8 byte order mark and leading white space.
func TrimSpaceBOM(p []byte) []byte {
	p = bytes.TrimPrefix(p, []byte("\xef\xbb\xbf"))
	return bytes.TrimLeft(p, " \t\r\n")
}

// TopKeys returns the first byte of the JSON value at the start of p
// ('{' or '[', else 0) and the keys of its top-level object — of its first
// element when it is an array — as far as p holds them.
func TopKeys(p []byte) (byte, []string) {
	p = TrimSpaceBOM(p)
	if len(p) == 0 || (p[0] != '{' && p[0] != '[') {
		return 0, nil
	}
	dec := json.NewDecoder(bytes.NewReader(p))
	if p[0] == '[' {
		if _, err := dec.Token(); err != nil {
			return p[0], nil
		}
	}
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return p[0], nil
	}
	var keys []string
	for len(keys) < 64 {
		k, ok, err := Key(dec)
		if err != nil || !ok {
			break
		}
		keys = append(keys, k)
		if SkipValue(dec) != nil {
			break
		}
	}
	return p[0], keys
}

// Lenient scalars. OTLP JSON writes 64-bit integers as strings and enums
// as numbers, other writers do otherwise: each type accepts both, null
// meaning unset.

// Int64 is an integer written as a number or a string.
type Int64 struct {
	V   int64
	Set bool
}

// UnmarshalJSON implements json.Unmarshaler.
func (x *Int64) UnmarshalJSON(b []byte) error {
	s, null := literal(b)
	if null {
		return nil
	}
	v, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		f, ferr := strconv.ParseFloat(s, 64)
		if ferr != nil || f != math.Trunc(f) || math.Abs(f) > 1<<63 {
			return valueErr("an integer", b)
		}
		v = int64(f)
	}
	x.V, x.Set = v, true
	return nil
}

// Uint64 is an unsigned integer (a timestamp) written as a number or a
// string.
type Uint64 struct {
	V   uint64
	Set bool
}

// UnmarshalJSON implements json.Unmarshaler.
func (x *Uint64) UnmarshalJSON(b []byte) error {
	s, null := literal(b)
	if null {
		return nil
	}
	v, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		f, ferr := strconv.ParseFloat(s, 64)
		if ferr != nil || f < 0 || f != math.Trunc(f) || f >= 1<<64 {
			return valueErr("an unsigned integer", b)
		}
		v = uint64(f)
	}
	x.V, x.Set = v, true
	return nil
}

// Float is a number, or a string holding one (protojson writes "NaN",
// "Infinity" and "-Infinity" as strings).
type Float struct {
	V   float64
	Set bool
}

// UnmarshalJSON implements json.Unmarshaler.
func (x *Float) UnmarshalJSON(b []byte) error {
	s, null := literal(b)
	if null {
		return nil
	}
	v, err := strconv.ParseFloat(s, 64)
	if err != nil {
		switch s {
		case "NaN":
			v = math.NaN()
		case "Infinity":
			v = math.Inf(1)
		case "-Infinity":
			v = math.Inf(-1)
		default:
			return valueErr("a number", b)
		}
	}
	x.V, x.Set = v, true
	return nil
}

// Bool is true or false, or a string holding one.
type Bool struct {
	V, Set bool
}

// UnmarshalJSON implements json.Unmarshaler.
func (x *Bool) UnmarshalJSON(b []byte) error {
	s, null := literal(b)
	if null {
		return nil
	}
	v, err := strconv.ParseBool(s)
	if err != nil {
		return valueErr("a boolean", b)
	}
	x.V, x.Set = v, true
	return nil
}

// Str is a string whose presence matters (an OTLP AnyValue's
// stringValue). Well-known attribute names are interned.
type Str struct {
	V   string
	Set bool
}

// UnmarshalJSON implements json.Unmarshaler.
func (x *Str) UnmarshalJSON(b []byte) error {
	if len(b) == 0 || b[0] != '"' {
		if string(b) == "null" {
			return nil
		}
		return valueErr("a string", b)
	}
	s, err := unquote(b)
	if err != nil {
		return err
	}
	x.V, x.Set = s, true
	return nil
}

// Name is a string that is often one of the schema's attribute or event
// names; those are interned so that decoding them does not allocate.
type Name string

// UnmarshalJSON implements json.Unmarshaler.
func (x *Name) UnmarshalJSON(b []byte) error {
	if len(b) == 0 || b[0] != '"' {
		if string(b) == "null" {
			return nil
		}
		return valueErr("a string", b)
	}
	s, err := unquote(b)
	if err != nil {
		return err
	}
	*x = Name(s)
	return nil
}

// Enum is an enumeration written as a number or as a name.
type Enum struct {
	N   int64
	S   string // the name, when written as one
	Set bool
}

// UnmarshalJSON implements json.Unmarshaler.
func (x *Enum) UnmarshalJSON(b []byte) error {
	s, null := literal(b)
	if null {
		return nil
	}
	if n, err := strconv.ParseInt(s, 10, 64); err == nil {
		x.N, x.Set = n, true
		return nil
	}
	if len(b) > 0 && b[0] == '"' {
		x.S, x.Set = s, true
		return nil
	}
	return valueErr("an enum", b)
}

// Scalar is any JSON value, as Jaeger's tag values are: a string, a
// number (kept as written), a boolean, null, or anything else kept raw.
type Scalar struct {
	Kind byte // 's' string, 'n' number, 'b' boolean, 'r' raw (object or array), 0 null
	Text string
	Bool bool
}

// UnmarshalJSON implements json.Unmarshaler.
func (x *Scalar) UnmarshalJSON(b []byte) error {
	if len(b) == 0 {
		return nil
	}
	switch c := b[0]; {
	case c == '"':
		s, err := unquote(b)
		if err != nil {
			return err
		}
		*x = Scalar{Kind: 's', Text: s}
	case c == 't' || c == 'f':
		*x = Scalar{Kind: 'b', Bool: c == 't'}
	case c == 'n':
		*x = Scalar{}
	case c == '-' || '0' <= c && c <= '9':
		*x = Scalar{Kind: 'n', Text: string(b)}
	default:
		*x = Scalar{Kind: 'r', Text: string(b)}
	}
	return nil
}

// literal returns the text of a number, boolean or string literal (a
// string unquoted) and whether it is null.
func literal(b []byte) (string, bool) {
	if len(b) == 0 || string(b) == "null" {
		return "", true
	}
	if b[0] == '"' {
		s, err := unquote(b)
		if err != nil {
			return string(b), false
		}
		return s, false
	}
	return string(b), false
}

// Unquote decodes a JSON string literal as encoding/json does, without
// allocating for the schema's well-known names.
func Unquote(b []byte) (string, error) { return unquote(b) }

func unquote(b []byte) (string, error) {
	if len(b) < 2 || b[0] != '"' || b[len(b)-1] != '"' {
		return "", valueErr("a string", b)
	}
	inner := b[1 : len(b)-1]
	if bytes.IndexByte(inner, '\\') < 0 && utf8.Valid(inner) {
		if s, ok := interned[string(inner)]; ok {
			return s, nil
		}
		return string(inner), nil
	}
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return "", valueErr("a string", b)
	}
	return s, nil
}

// Run decodes a stream of JSON values: it calls step until step returns
// io.EOF (the input is done: nil). A visitor's error (what stop returns)
// and an I/O error of r end the stream and are returned; any other error
// ends what is left of the input, which bad reports as one skip (tooLong
// when r hit its size limit).
func (r *Reader) Run(step func() error, stop func() error, bad func(tooLong bool, err error)) error {
	for {
		err := step()
		switch {
		case err == nil:
			continue
		case err == io.EOF:
			return nil
		}
		if serr := stop(); serr != nil {
			return serr
		}
		if r.err != nil {
			return r.err
		}
		bad(r.tooLong, err)
		return nil
	}
}
