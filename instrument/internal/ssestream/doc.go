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
// Neither panics on any input.
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
//     passed to ScanChunk and the result to Sink.OnChunk. Data lines with a
//     blank payload are ignored. Every data line is handled on its own: a
//     multi-line data event (several "data:" lines before a blank line) is
//     NOT joined, each line is scanned separately (OpenAI-compatible servers
//     put every JSON chunk on one line).
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
// Malformed and truncated payloads are scanned best effort: everything found
// before the point of failure is kept. In particular Tokens is decided by the
// opening bytes of a value, so a payload cut inside a non-empty content
// string (`{"choices":[{"delta":{"content":"a`) reports Tokens 1 together
// with Malformed (and Truncated when the Parser cut it). Model, ID and
// FinishReason are set only from strings that are complete, and usage
// numbers only when the number is followed by another byte (a number
// running into the end of the payload may be cut short and is ignored).
package ssestream
