// Package decodeutil holds what the trace decoders of package source share:
// limits, identifier and kind normalisation, the checks every decoded span
// passes, span reuse, and JSON helpers (a line- and size-aware reader,
// lenient scalars, structure skipping, format sniffing).
package decodeutil
