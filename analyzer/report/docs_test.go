package report

import (
	"bytes"
	"encoding/json"
	"os"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"time"
)

// TestDocsReportFormat keeps docs/report.md in step with the types: its
// example decodes without unknown fields, and every JSON field is
// documented.
func TestDocsReportFormat(t *testing.T) {
	doc, err := os.ReadFile("../../docs/report.md")
	if err != nil {
		t.Skipf("docs not beside the package: %v", err)
	}
	m := regexp.MustCompile("(?s)```json\n(.*?)```").FindSubmatch(doc)
	if m == nil {
		t.Fatal("no JSON example in docs/report.md")
	}
	dec := json.NewDecoder(bytes.NewReader(m[1]))
	dec.DisallowUnknownFields()
	var rpt Report
	if err := dec.Decode(&rpt); err != nil {
		t.Fatalf("the example does not decode: %v", err)
	}
	if rpt.Schema != Schema {
		t.Errorf("example schema %q", rpt.Schema)
	}
	seen := map[reflect.Type]bool{}
	var walk func(reflect.Type)
	walk = func(typ reflect.Type) {
		for typ.Kind() == reflect.Slice || typ.Kind() == reflect.Pointer || typ.Kind() == reflect.Map {
			typ = typ.Elem()
		}
		if typ.Kind() != reflect.Struct || typ == reflect.TypeFor[time.Time]() || seen[typ] {
			return
		}
		seen[typ] = true
		for i := range typ.NumField() {
			f := typ.Field(i)
			name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			if name == "" || name == "-" {
				continue
			}
			if !bytes.Contains(doc, []byte("`"+name+"`")) {
				t.Errorf("%s.%s (json %q) is not in docs/report.md", typ.Name(), f.Name, name)
			}
			walk(f.Type)
		}
	}
	walk(reflect.TypeFor[Report]())
}
