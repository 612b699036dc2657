package report

import (
	"encoding/json"
	"io"
)

// printJSON writes the report as indented JSON (tokentrace.report/v1,
// docs/report.md): fields in struct order, map keys sorted, "<", ">" and
// "&" left as they are. Every request is written, whatever MaxRequests.
func printJSON(w io.Writer, rpt *Report) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(rpt)
}
