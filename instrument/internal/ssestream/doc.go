// Package ssestream observes OpenAI-compatible streamed responses
// (Server-Sent Events) on the hot path of an inference gateway and tells, per
// SSE data line, whether the chunk carries output tokens, plus the usage,
// model, id and finish_reason it reports.
//
// It runs once per generated token, so it is built for speed and does not
// allocate: ScanChunk is a hand-written, iterative, zero-allocation JSON
// walker (no encoding/json, no reflection, no recursion), and Parser splits
// arbitrarily fragmented writes into lines, scanning complete lines in place
// and buffering only a trailing partial line (bounded by Parser.MaxLine).
// Neither panics on any input. On a stream, the Parser skips most of the
// walk: consecutive chunks are identical but for the token text (see Fast
// path).
//
// The walker is one loop over the payload that tracks the nesting with a
// fixed bit stack and the context (top level, choices, choice, delta/message,
// usage) of the first four levels; every other value is validated and
// skipped. Strings are scanned 8 bytes at a time (SWAR), and common keys are
// recognised by comparing whole words with constants instead of searching
// for their closing quote.
//
// # Lines (Parser)
//
//   - Lines end with "\n" or "\r\n". A lone "\r" is NOT a line terminator
//     here (the WHATWG spec says it is); it stays part of the line, so a
//     payload containing one is usually reported Malformed. OpenAI-compatible
//     servers do not emit lone CRs.
//   - Blank lines, comments (":..."), and other fields ("event:", "id:",
//     "retry:", unknown names) are ignored; non-blank ones count in
//     Parser.Lines.
//   - "data:" plus an optional single space introduces a payload, which is
//     scanned as ScanChunk does (see Fast path) and the result passed to
//     Sink.OnChunk. Data lines with a blank payload are ignored. Every data
//     line is handled on its own: a multi-line data event (several "data:"
//     lines before a blank line) is NOT joined, each line is scanned
//     separately (OpenAI-compatible servers put every JSON chunk on one
//     line).
//   - A leading UTF-8 BOM on the stream is not stripped (the first line would
//     then be ignored as an unknown field).
//   - A line longer than MaxLine bytes (counted before "\n", including a
//     "\r") is cut: its first MaxLine bytes are scanned with
//     Chunk.Truncated set, the rest is dropped up to the next "\n", and
//     OversizedLines is incremented. The truncated prefix may be delivered
//     as soon as the limit is exceeded, before its "\n" arrives. Memory stays
//     bounded by MaxLine whatever the input.
//   - Close delivers a final line that lacks its newline, resets the line
//     state and keeps the counters; Reset also clears the counters.
//
// The sequence of chunks delivered does not depend on how the stream is split
// into Feed calls.
//
// # Chunks (ScanChunk)
//
//   - Done: the payload is "[DONE]" after trimming JSON whitespace (space,
//     tab, CR, LF). JSON whitespace is accepted wherever JSON allows it.
//   - Malformed: the payload is not exactly one JSON object (trailing data,
//     truncation, bad syntax, nesting deeper than 256 levels). The JSON
//     grammar is checked fully except inside strings: string contents are
//     not validated (control bytes, invalid escapes and invalid UTF-8 are
//     accepted). Keys are compared raw, so a key spelled with escapes
//     ("\u0063ontent") is not recognised.
//   - Tokens is 1 when any choices[i] has a non-empty delta.content,
//     delta.reasoning_content, delta.reasoning, delta.refusal string, a
//     non-empty delta.tool_calls array, a non-empty text string (legacy
//     completions), or the same fields under choices[i].message. An empty
//     string, null, a role-only delta and "choices":[] give 0. Keys are
//     recognised only in key position of the right object, so escaped
//     quotes inside strings cannot fake them (nor can, say,
//     choices[i].logprobs.content). Tokens means "at least one": it is 1
//     even when several choices carry output or a server packs several
//     tokens into one chunk, so exact counts must come from usage.
//   - Error: a top-level "error" member whose value is not null.
//   - HasUsage: "usage" is an object with at least one numeric member;
//     PromptTokens and CompletionTokens take the integer part of
//     usage.prompt_tokens / usage.completion_tokens (negative → 0,
//     saturating at 2^31-1).
//   - Model and ID: the raw (still escaped) bytes of the top-level string
//     values, nil when absent or not strings; the last occurrence wins.
//   - FinishReason: the first non-empty finish_reason string over all
//     choices; null and "" are skipped.
//
// # Fast path (Parser)
//
// Consecutive chunks of one stream are byte-identical up to the token text,
// and usually after it too (but for usage numbers when vLLM reports usage in
// every chunk). One line, cut in three: the line prefix, the token text, the
// tail:
//
//	data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"content":"
//	 world
//	"},"logprobs":null,"finish_reason":null}]}
//
// The Parser keeps what the last payloads had in common and walks only the
// rest. It always delivers exactly the Chunk that ScanChunk gives for the
// payload (FuzzParserFastPath checks it on streams built from realistic
// templates); Model, ID and FinishReason still point into the current line.
//
//   - Resume point. When a walk from the start of a payload reaches the
//     opening quote of the first string value of a content-like member
//     (choices[i].text, or content, reasoning_content, reasoning or refusal
//     under choices[i].delta or choices[i].message), the Parser records the
//     walker state there (nesting and context, the meaning of the value,
//     the Chunk fields found so far with Model, ID and FinishReason as
//     offsets) and copies the line up to and including that quote ("data: "
//     included, at most 512 bytes): the line prefix.
//   - Prefix hit. A line that starts with the line prefix (bytes.Equal;
//     Feed also looks for the end of the line only after it) is not walked
//     from its start: the Parser finds the closing quote of the string, then
//     uses the tail template, or resumes the walker after the string.
//   - Tail template. After such a resumed walk the Parser copies the rest of
//     the payload from the closing quote (the tail, at most 512 bytes) with
//     the result of its walk. A later payload that has the same prefix and
//     the same tail gets that result without any walk. Plain integer usage
//     numbers ([1-9][0-9]*) are holes of the template: they may differ, and
//     the template result is completed with their values.
//
// Why this is exact:
//
//   - The walker reads forward only and carries all its state in a few
//     variables (position, nesting bit stack, contexts of the first levels,
//     meaning of the next value) and in the Chunk, of which it reads only
//     FinishReason (to keep the first one). Its look-aheads stop at
//     the first byte that does not belong to the token they examine
//     (whitespace, numbers, literals, string ends, empty containers, an
//     empty tool_calls array), which lies before the resume quote since the
//     walk reached that quote expecting a value. The one exception, the key
//     matcher, reads up to 24 bytes ahead but only to recognise a key, and
//     classifies it as the slow path does from the key's own bytes
//     (TestKeyMatcher). So the state at the quote depends only on the bytes
//     before it, and resuming from it is the walk ScanChunk does.
//   - The line rules (the "data:" field, the optional space, leading
//     whitespace) are settled by the bytes up to the '{' of the payload, so
//     a line that starts with the line prefix has its payload at the same
//     offset; trailing whitespace or a '\r' cannot be cut off inside the
//     prefix, which ends with a quote. A line truncated by MaxLine counts as
//     a hit only if it still holds the whole prefix.
//   - A value string changes nothing in the walker state but Tokens, and the
//     walker sets Tokens but never reads it: the tail is walked with Tokens
//     0, so its own contribution is recorded apart, and Tokens is the OR of
//     the prefix's, the string's (non-empty) and the tail's. Slices found in
//     the tail keep their offset from the closing quote.
//   - The walker scans a number's digits up to the first non-digit and
//     branches only on that byte; a usage number's digits only end up in
//     PromptTokens or CompletionTokens, which it writes but never reads. So
//     a hole can hold any plain integer as long as the byte after it is the
//     template's (neither a digit nor '.', 'e', 'E', as the template's walk
//     took the integer path), and the fields come from the holes that wrote
//     them last in the template's walk. Holes are used only when no slice
//     lies in the tail, whose length they change.
//
// A line that does not start with the line prefix (the role chunk, the
// finish chunk, a changed field before the content) is walked in full, and
// its resume point, if any, replaces the cached one. Streams whose chunks
// do not share a prefix (n > 1 choices alternating, tool-call arguments,
// usage numbers before choices) gain little: after three resume points
// cached in a row without a hit, a new one is cached only every 64th line
// until a line hits again, so they pay about one failed comparison per
// line. A tail that keeps changing in other ways than its holes is likewise
// copied again only now and then. The copies live in one 1 KiB buffer
// allocated on first use; Reset drops them.
//
// Malformed and truncated payloads are scanned best effort: everything found
// before the point of failure is kept. In particular Tokens is decided by the
// opening bytes of a value, so a payload cut inside a non-empty content
// string (`{"choices":[{"delta":{"content":"a`) reports Tokens 1 together
// with Malformed (and Truncated when the Parser cut it). Model, ID and
// FinishReason are set only from strings that are complete, and usage
// numbers only when the number is followed by another byte (a number
// running into the end of the payload may be cut short and is ignored).
package ssestream
