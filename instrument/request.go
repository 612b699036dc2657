package instrument

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"slices"
	"strings"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/tokentrace/tokentrace/semconv"
)

// requestBody is the part of an OpenAI-compatible request body the
// middleware reads, as json.Unmarshal decodes it (the slow path of
// parseRequestBody). Prompt text is only measured, never kept: messages and
// prompt decode straight into character counts, without building strings.
type requestBody struct {
	Model               string       `json:"model"`
	Stream              bool         `json:"stream"`
	MaxTokens           int          `json:"max_tokens"`
	MaxCompletionTokens int          `json:"max_completion_tokens"`
	Messages            messagesText `json:"messages"`
	Prompt              promptText   `json:"prompt"`
	StreamOptions       *struct {
		IncludeUsage bool `json:"include_usage"`
	} `json:"stream_options"`
}

// readRequestInfo reads up to limit bytes of r's body to learn what the
// request asks for, and puts back a body that yields exactly the original
// bytes (bb, when the whole body was read). A body it cannot parse gives a
// RequestInfo with only the operation set.
func readRequestInfo(r *http.Request, body *io.ReadCloser, limit int64, bb *bufferedBody) RequestInfo {
	info := RequestInfo{Operation: operationOf(r.URL.Path)}
	if *body == nil || *body == http.NoBody {
		return info
	}
	if r.ContentLength > limit {
		// Too large to parse, as its length says: pass it on unread.
		return info
	}
	buf, err := readUpTo(*body, limit+1, r.ContentLength)
	if err != nil || int64(len(buf)) > limit {
		*body = &replayBody{Reader: io.MultiReader(bytes.NewReader(buf), *body), c: *body}
		return info
	}
	// The original reached EOF: never read it again. A server closes a
	// request body once the handler starts answering, and a Transport
	// still sending the body upstream (a ReverseProxy whose engine
	// answered before reading it) must then get EOF, not
	// http.ErrBodyReadAfterClose, which breaks the upstream connection.
	*bb = bufferedBody{c: *body}
	bb.r.Reset(buf)
	*body = bb
	parseRequestBody(buf, &info)
	return info
}

// readUpTo reads r until EOF or n bytes, into a buffer sized from the
// declared length when it is known (one allocation instead of io.ReadAll's
// growth from 512 bytes).
func readUpTo(r io.Reader, n, contentLength int64) ([]byte, error) {
	size := int64(512)
	if contentLength > 0 { // 0 on a client request may mean unknown
		size = contentLength + 1 // +1: room to read EOF without growing
	}
	buf := make([]byte, 0, min(size, n))
	for int64(len(buf)) < n {
		if len(buf) == cap(buf) {
			buf = slices.Grow(buf, int(min(int64(cap(buf)), n-int64(len(buf)))))
		}
		m, err := r.Read(buf[len(buf):min(int64(cap(buf)), n)])
		buf = buf[:len(buf)+m]
		if err == io.EOF {
			return buf, nil
		}
		if err != nil {
			return buf, err
		}
	}
	return buf, nil
}

// parseRequestBody fills info from an OpenAI-compatible JSON request body,
// exactly as json.Unmarshal into requestBody would. A body that is not
// valid JSON leaves info as it is.
//
// The fast path walks the body in place once it is known to be valid JSON,
// and allocates only the model string; it hands anything unusual (escaped
// or non-ASCII keys, keys that match a field only case-insensitively, a
// value of an unexpected type) to json.Unmarshal, whose rules decide.
func parseRequestBody(buf []byte, info *RequestInfo) {
	if !json.Valid(buf) {
		return
	}
	var f requestFields
	if !f.scan(buf) {
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
		info.Messages = rb.Messages.n
		info.PromptChars = rb.Messages.chars + int(rb.Prompt)
		return
	}
	info.Model = string(f.model)
	info.Stream = f.stream
	info.MaxTokens = f.maxTokens
	if f.maxCompletionTokens > 0 {
		info.MaxTokens = f.maxCompletionTokens
	}
	info.IncludeUsage = f.includeUsage
	info.Messages = f.messages.n
	info.PromptChars = f.messages.chars + f.prompt
}

// requestFields is what the fast path of parseRequestBody found.
type requestFields struct {
	model               []byte // raw string content (no escapes)
	stream              bool
	maxTokens           int
	maxCompletionTokens int
	messages            messagesText
	prompt              int
	includeUsage        bool
}

// scan reads the fields from b, which must be valid JSON. It reports false
// when json.Unmarshal must decide instead: b is not an object, or holds
// something the fast path does not interpret exactly as json.Unmarshal
// would. Members are applied in order, so that a repeated key acts as it
// does for json.Unmarshal (null leaves a string, bool or number as it is
// and clears a slice or pointer).
func (f *requestFields) scan(b []byte) bool {
	i := skipJSONSpace(b, 0)
	if i >= len(b) || b[i] != '{' {
		return false
	}
	ok := true
	forEachMember(b[i:], func(key, v []byte) bool {
		switch keyName(key, requestKeys) {
		case "":
		case "model":
			switch v[0] {
			case '"':
				if bytes.IndexByte(v, '\\') >= 0 || !utf8.Valid(v) {
					ok = false // to be unescaped, or made valid UTF-8
				}
				f.model = v[1 : len(v)-1]
			case 'n':
			default:
				ok = false
			}
		case "stream":
			ok = jsonBool(v, &f.stream)
		case "max_tokens":
			ok = jsonInt(v, &f.maxTokens)
		case "max_completion_tokens":
			ok = jsonInt(v, &f.maxCompletionTokens)
		case "messages":
			ok = f.messages.UnmarshalJSON(v) == nil
		case "prompt":
			f.prompt = textChars(v)
		case "stream_options":
			switch v[0] {
			case 'n':
				f.includeUsage = false
			case '{':
				forEachMember(v, func(key, v []byte) bool {
					switch keyName(key, streamOptionsKeys) {
					case "":
					case "include_usage":
						ok = jsonBool(v, &f.includeUsage)
					default:
						ok = false
					}
					return ok
				})
			default:
				ok = false
			}
		default: // needs json.Unmarshal
			ok = false
		}
		return ok
	})
	return ok
}

var (
	requestKeys       = []string{"model", "stream", "max_tokens", "max_completion_tokens", "messages", "prompt", "stream_options"}
	streamOptionsKeys = []string{"include_usage"}
)

// keyName returns the name in names that the quoted JSON key is, exactly;
// "" when the key can match none of them; or "?" when json.Unmarshal must
// decide (an escape or a non-ASCII byte in the key, or a match that is
// only case-insensitive).
func keyName(key []byte, names []string) string {
	raw := key[1 : len(key)-1]
	for _, c := range raw {
		if c == '\\' || c >= utf8.RuneSelf {
			return "?"
		}
	}
	for _, n := range names {
		if string(raw) == n {
			return n
		}
	}
	for _, n := range names {
		if len(raw) == len(n) && equalFoldASCII(string(raw), n) {
			return "?"
		}
	}
	return ""
}

// jsonBool stores a JSON boolean; null leaves *p as it is.
func jsonBool(v []byte, p *bool) bool {
	switch v[0] {
	case 't':
		*p = true
	case 'f':
		*p = false
	case 'n':
	default:
		return false
	}
	return true
}

// jsonInt stores a JSON integer of up to 18 digits; null leaves *p as it
// is. Anything else (a fraction, an exponent, a string) is for
// json.Unmarshal.
func jsonInt(v []byte, p *int) bool {
	if v[0] == 'n' {
		return true
	}
	d := v
	if d[0] == '-' {
		d = d[1:]
	}
	if len(d) == 0 || len(d) > 18 {
		return false
	}
	n := 0
	for _, c := range d {
		if c < '0' || c > '9' {
			return false
		}
		n = n*10 + int(c-'0')
	}
	if v[0] == '-' {
		n = -n
	}
	*p = n
	return true
}

// messagesText decodes a chat "messages" array into the number of messages
// and the characters of their content. As before it was counted in place,
// anything but an array (or null) fails the whole body, and a message that
// is not an object counts as a message without text.
type messagesText struct{ n, chars int }

var errNotArray = errors.New("messages is not an array")

func (m *messagesText) UnmarshalJSON(b []byte) error {
	*m = messagesText{}
	b = trimJSONSpace(b)
	if len(b) == 0 || b[0] == 'n' {
		return nil
	}
	if b[0] != '[' {
		return errNotArray
	}
	forEachElement(b, func(v []byte) {
		m.n++
		if v[0] == '{' {
			m.chars += textChars(objectMember(v, "content"))
		}
	})
	return nil
}

// promptText decodes a completion "prompt" into its characters.
type promptText int

func (p *promptText) UnmarshalJSON(b []byte) error {
	*p = promptText(textChars(b))
	return nil
}

// textChars counts the characters of text in a JSON value: a string, an
// array of strings, or content parts ({"type":"text","text":...}), the
// characters json.Unmarshal would decode, counted in place: an escape is
// one character (\uXXXX too, and a \uXXXX\uXXXX surrogate pair), and a
// byte that is not UTF-8 is one (U+FFFD). v must be valid JSON (it comes
// from json.Unmarshal); on anything else the count is only a guess, never
// a panic.
func textChars(v []byte) int {
	v = trimJSONSpace(v)
	if len(v) == 0 {
		return 0
	}
	switch v[0] {
	case '"':
		return stringChars(v)
	case '[':
		n := 0
		forEachElement(v, func(e []byte) { n += textChars(e) })
		return n
	case '{':
		return textChars(objectMember(v, "text"))
	}
	return 0
}

// stringChars counts the characters of the JSON string literal s, which
// starts with its opening quote.
func stringChars(s []byte) int {
	n := 0
	for i := 1; i < len(s); {
		c := s[i]
		switch {
		case c == '"':
			return n
		case c == '\\':
			if i+1 < len(s) && s[i+1] == 'u' {
				r := getu4(s[i:])
				if r < 0 {
					return n
				}
				i += 6
				// A valid surrogate pair decodes to one character; any
				// other surrogate to U+FFFD.
				if utf16.IsSurrogate(r) && utf16.DecodeRune(r, getu4(s[i:])) != unicode.ReplacementChar {
					i += 6
				}
			} else {
				i += 2
			}
		case c < utf8.RuneSelf:
			i++
		default:
			_, size := utf8.DecodeRune(s[i:])
			i += size
		}
		n++
	}
	return n
}

// getu4 decodes \uXXXX from the beginning of s, returning the hex value,
// or it returns -1 (as encoding/json's does).
func getu4(s []byte) rune {
	if len(s) < 6 || s[0] != '\\' || s[1] != 'u' {
		return -1
	}
	var r rune
	for _, c := range s[2:6] {
		switch {
		case '0' <= c && c <= '9':
			c = c - '0'
		case 'a' <= c && c <= 'f':
			c = c - 'a' + 10
		case 'A' <= c && c <= 'F':
			c = c - 'A' + 10
		default:
			return -1
		}
		r = r*16 + rune(c)
	}
	return r
}

// forEachElement calls f with each element of the JSON array arr.
func forEachElement(arr []byte, f func(v []byte)) {
	i := skipJSONSpace(arr, 1)
	for i < len(arr) && arr[i] != ']' {
		end := skipValue(arr, i)
		if end <= i {
			return
		}
		f(arr[i:end])
		i = skipJSONSpace(arr, end)
		if i >= len(arr) || arr[i] != ',' {
			return
		}
		i = skipJSONSpace(arr, i+1)
	}
}

// objectMember returns the value of the JSON object obj's last member named
// name, matched as json.Unmarshal matches a field name (exactly or
// case-insensitively; name holds no k or s, the only letters that fold
// with a non-ASCII rune), or nil.
func objectMember(obj []byte, name string) []byte {
	var found []byte
	forEachMember(obj, func(key, v []byte) bool {
		if keyIs(key, name) {
			found = v
		}
		return true
	})
	return found
}

// forEachMember calls f with each member of the JSON object obj (the key
// with its quotes), until f returns false.
func forEachMember(obj []byte, f func(key, v []byte) bool) {
	i := skipJSONSpace(obj, 1)
	for i < len(obj) && obj[i] == '"' {
		kend := skipString(obj, i)
		key := obj[i:kend]
		i = skipJSONSpace(obj, kend)
		if i >= len(obj) || obj[i] != ':' || len(key) < 2 {
			return
		}
		i = skipJSONSpace(obj, i+1)
		if i >= len(obj) {
			return
		}
		vend := skipValue(obj, i)
		if vend <= i || !f(key, obj[i:vend]) {
			return
		}
		i = skipJSONSpace(obj, vend)
		if i >= len(obj) || obj[i] != ',' {
			return
		}
		i = skipJSONSpace(obj, i+1)
	}
}

// keyIs reports whether the quoted JSON key equals name, ASCII
// case-insensitively, after unescaping.
func keyIs(key []byte, name string) bool {
	if len(key) < 2 {
		return false
	}
	raw := key[1 : len(key)-1]
	if bytes.IndexByte(raw, '\\') >= 0 {
		// Escaped key (never sent by real clients): decode it the slow way.
		var s string
		if json.Unmarshal(key, &s) != nil {
			return false
		}
		raw = []byte(s)
	}
	return len(raw) == len(name) && equalFoldASCII(string(raw), name)
}

// skipValue returns the index just past the JSON value starting at v[i].
func skipValue(v []byte, i int) int {
	switch v[i] {
	case '"':
		return skipString(v, i)
	case '{', '[':
		depth := 0
		for ; i < len(v); i++ {
			switch v[i] {
			case '"':
				i = skipString(v, i) - 1
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return i + 1
				}
			}
		}
		return len(v)
	}
	for i < len(v) {
		switch v[i] {
		case ',', '}', ']', ' ', '\t', '\n', '\r':
			return i
		}
		i++
	}
	return i
}

// skipString returns the index just past the JSON string starting at v[i].
func skipString(v []byte, i int) int {
	from := i + 1
	for i = from; i < len(v); i++ {
		j := bytes.IndexByte(v[i:], '"')
		if j < 0 {
			break
		}
		i += j
		k := i // an odd run of backslashes escapes the quote
		for k > from && v[k-1] == '\\' {
			k--
		}
		if (i-k)%2 == 0 {
			return i + 1
		}
	}
	return len(v)
}

func skipJSONSpace(v []byte, i int) int {
	for i < len(v) && (v[i] == ' ' || v[i] == '\t' || v[i] == '\n' || v[i] == '\r') {
		i++
	}
	return i
}

func trimJSONSpace(v []byte) []byte {
	v = v[skipJSONSpace(v, 0):]
	for len(v) > 0 && (v[len(v)-1] == ' ' || v[len(v)-1] == '\t' || v[len(v)-1] == '\n' || v[len(v)-1] == '\r') {
		v = v[:len(v)-1]
	}
	return v
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

// bufferedBody gives back a whole body that was read ahead, and closes the
// original. It lives in the request's reqState.
// Like replayBody it is only an io.ReadCloser.
type bufferedBody struct {
	r bytes.Reader
	c io.Closer
}

func (b *bufferedBody) Read(p []byte) (int, error) { return b.r.Read(p) }
func (b *bufferedBody) Close() error               { return b.c.Close() }

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
