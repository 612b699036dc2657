package report

import (
	"bytes"
	"encoding/xml"
	"errors"
	"io"
	"reflect"
	"regexp"
	"strings"
	"testing"
)

func renderHTML(t *testing.T, rpt *Report, opts Options) string {
	t.Helper()
	var b bytes.Buffer
	if err := Write(&b, rpt, "html", opts); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// wellFormed parses s as strict XML and returns the element names in
// document order.
func wellFormed(t *testing.T, what, s string) []string {
	t.Helper()
	d := xml.NewDecoder(strings.NewReader(s))
	var names []string
	for {
		tok, err := d.Token()
		if errors.Is(err, io.EOF) {
			return names
		}
		if err != nil {
			line := d.InputPos
			l, _ := line()
			t.Fatalf("%s is not well-formed XML: %v (line %d: %q)", what, err, l, strings.Split(s, "\n")[max(0, l-1)])
		}
		if se, ok := tok.(xml.StartElement); ok {
			names = append(names, se.Name.Local)
		}
	}
}

var svgRE = regexp.MustCompile(`(?s)<svg .*?</svg>`)

func TestHTMLStructure(t *testing.T) {
	rpt := basicReport()
	page := renderHTML(t, rpt, goldenOpts)
	if !strings.HasPrefix(page, "<!DOCTYPE html>\n<html lang=\"en\">") || !strings.HasSuffix(strings.TrimSpace(page), "</html>") {
		t.Errorf("page does not start with the doctype and end with </html>")
	}
	// The whole page is well-formed XML, so every tag is balanced.
	names := wellFormed(t, "the page", page)
	for _, tag := range []string{"html", "head", "body", "main", "section", "table", "svg", "article", "figure"} {
		open := strings.Count(page, "<"+tag+">") + strings.Count(page, "<"+tag+" ")
		if closed := strings.Count(page, "</"+tag+">"); open != closed || open == 0 {
			t.Errorf("<%s>: %d opened, %d closed", tag, open, closed)
		}
	}
	if names[0] != "html" || strings.Count(strings.Join(names, " "), "main") != 1 {
		t.Errorf("elements %v", names[:5])
	}
	// Each SVG parses on its own: 2 histograms, 2 request timelines.
	svgs := svgRE.FindAllString(page, -1)
	if len(svgs) != 4 {
		t.Fatalf("%d SVGs, want 4", len(svgs))
	}
	for i, s := range svgs {
		if n := wellFormed(t, "SVG", s); n[0] != "svg" || !strings.Contains(s, `xmlns="http://www.w3.org/2000/svg"`) {
			t.Errorf("SVG %d: root %v", i, n[:1])
		}
	}
	// The timelines shade a segment per cause, in its colour.
	for _, c := range []string{CausePrefill, CauseBatch, CauseGC, CauseKVSwap, CauseUnknown} {
		if !strings.Contains(page, `fill="`+causeColor(c)+`" fill-opacity`) {
			t.Errorf("no shaded %s segment", c)
		}
	}
	// The request shown in depth, their links and paragraphs.
	for _, r := range rpt.Requests {
		if r.Degraded() && !strings.Contains(page, r.TraceID) {
			t.Errorf("request %s missing", r.TraceID)
		}
	}
	for _, want := range []string{
		`href="http://localhost:16686/trace/4f2a9c1e5b7d3f8a0c2e4b6d8f0a1c3e"`,
		"Tokens 51–100 came at 86 ms/token, 3.9× the request&#39;s 22 ms baseline",
		"error_rate", "not a tokentrace span", "TPOT distribution (log buckets)",
	} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %q", want)
		}
	}
	// Self-contained: no script, no external resource.
	for _, bad := range []string{"<script", "<link", " src=", "@import", "url("} {
		if strings.Contains(page, bad) {
			t.Errorf("page contains %q", bad)
		}
	}
}

func TestHTMLEmpty(t *testing.T) {
	page := renderHTML(t, emptyReport(), Options{})
	wellFormed(t, "the empty page", page)
	if strings.Contains(page, "<svg") || strings.Contains(page, `id="requests"`) {
		t.Error("empty report draws charts or requests")
	}
}

const payload = "<script>alert(1)</script>\"onload=alert(1) x='<img src=x onerror=alert(1)>' &amp; \x1b[2J | ` ]]> <!-- *_[x](javascript:alert(1))"

// poison sets every string reachable from v (fields, slices, map keys)
// to payload, and every URL to a javascript: URL.
func poison(v reflect.Value) {
	switch v.Kind() {
	case reflect.Pointer:
		if !v.IsNil() {
			poison(v.Elem())
		}
	case reflect.String:
		if v.CanSet() {
			v.SetString(payload)
		}
	case reflect.Struct:
		for i := range v.NumField() {
			if f := v.Field(i); f.CanSet() {
				if v.Type().Field(i).Name == "URL" {
					f.SetString("javascript:alert(1)")
					continue
				}
				poison(f)
			}
		}
	case reflect.Slice:
		for i := range v.Len() {
			poison(v.Index(i))
		}
	case reflect.Map:
		if v.Type().Key().Kind() == reflect.String {
			m := reflect.MakeMap(v.Type())
			i := 0
			for _, k := range v.MapKeys() {
				m.SetMapIndex(reflect.ValueOf(payload+strings.Repeat(" ", i)), v.MapIndex(k))
				i++
			}
			v.Set(m)
		}
	}
}

func TestEscaping(t *testing.T) {
	rpt := basicReport()
	poison(reflect.ValueOf(rpt))
	if rpt.Requests[1].Segments[0].Evidence[0].TraceID != payload || rpt.Requests[1].URL != "javascript:alert(1)" {
		t.Fatal("poison did not reach every field")
	}

	t.Run("html", func(t *testing.T) {
		page := renderHTML(t, rpt, Options{JaegerUI: "javascript:alert(1)//"})
		for _, bad := range []string{"<script", "<img", "\"onload=", " onload=", "onerror=alert(1)>", "href=\"javascript:", "\x1b"} {
			if strings.Contains(page, bad) {
				i := strings.Index(page, bad)
				t.Errorf("unescaped %q in the page: …%s…", bad, page[max(0, i-80):min(len(page), i+80)])
			}
		}
		if !strings.Contains(page, "&lt;script&gt;alert(1)&lt;/script&gt;") {
			t.Error("the payload does not show, escaped")
		}
		wellFormed(t, "the poisoned page", page)
		for _, s := range svgRE.FindAllString(page, -1) {
			wellFormed(t, "a poisoned SVG", s)
		}
	})
	t.Run("md", func(t *testing.T) {
		var b bytes.Buffer
		if err := Write(&b, rpt, "md", Options{}); err != nil {
			t.Fatal(err)
		}
		md := b.String()
		if n, esc := strings.Count(md, "<"), strings.Count(md, `\<`); n != esc {
			t.Errorf("%d of %d '<' unescaped in Markdown", n-esc, n)
		}
		if regexp.MustCompile(`[^\\]\]\(javascript`).MatchString(md) || strings.Contains(md, "\x1b") {
			t.Error("a link or an escape sequence from the input survived")
		}
		for _, line := range strings.Split(md, "\n") {
			if strings.HasPrefix(line, "| ") {
				cells := strings.Count(strings.ReplaceAll(line, `\|`, ""), "|")
				if cells < 3 {
					t.Errorf("broken table row %q", line)
				}
			}
		}
	})
	t.Run("text", func(t *testing.T) {
		var b bytes.Buffer
		if err := Write(&b, rpt, "text", Options{}); err != nil {
			t.Fatal(err)
		}
		if strings.Contains(b.String(), "\x1b") {
			t.Error("an escape sequence from the input reached the terminal")
		}
	})
	t.Run("json", func(t *testing.T) {
		var b bytes.Buffer
		if err := Write(&b, rpt, "json", Options{}); err != nil {
			t.Fatal(err)
		}
		if strings.Contains(b.String(), "\x1b") {
			t.Error("raw control character in JSON")
		}
	})
}
