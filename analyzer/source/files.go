package source

import (
	"bufio"
	"compress/gzip"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/tokentrace/tokentrace/analyzer/model"
	du "github.com/tokentrace/tokentrace/analyzer/source/internal/decodeutil"
	"github.com/tokentrace/tokentrace/analyzer/source/jaegerjson"
	"github.com/tokentrace/tokentrace/analyzer/source/otlpjson"
	"github.com/tokentrace/tokentrace/analyzer/source/otlpproto"
)

// Files returns a Source that opens each path in turn, detects its format
// from the content (not the extension), and decodes it. A directory stands
// for the regular files directly in it (sorted, hidden ones left out);
// "-" is standard input. Spans repeated across or within the files are
// skipped (the first kept), which costs a few dozen bytes per span read. An empty file is a skip; a file of an unknown
// format is an error (*FormatError) naming the file and the formats
// expected, as are I/O errors.
func Files(paths []string, skips *Skips) Source {
	return &files{paths: slices.Clone(paths), skips: skips}
}

type files struct {
	paths []string
	skips *Skips
}

func (f *files) Spans(ctx context.Context, visit Visitor) error {
	seen := NewSeenSpans()
	for _, p := range f.paths {
		names, err := expand(p)
		if err != nil {
			return err
		}
		for _, name := range names {
			if err := ctx.Err(); err != nil {
				return err
			}
			if err := decodeFile(ctx, name, f.skips, seen, visit); err != nil {
				return err
			}
		}
	}
	return nil
}

func expand(p string) ([]string, error) {
	if p == "-" {
		return []string{p}, nil
	}
	fi, err := os.Stat(p)
	if err != nil {
		return nil, fmt.Errorf("source: %w", err)
	}
	if !fi.IsDir() {
		return []string{p}, nil
	}
	entries, err := os.ReadDir(p)
	if err != nil {
		return nil, fmt.Errorf("source: %w", err)
	}
	var out []string
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), ".") || !e.Type().IsRegular() {
			continue
		}
		out = append(out, filepath.Join(p, e.Name()))
	}
	return out, nil // ReadDir sorts by name
}

func decodeFile(ctx context.Context, name string, skips *Skips, seen *SeenSpans, visit Visitor) error {
	if name == "-" {
		return decode(ctx, "stdin", os.Stdin, skips, seen, visit)
	}
	f, err := os.Open(name)
	if err != nil {
		return fmt.Errorf("source: %w", err)
	}
	defer f.Close()
	return decode(ctx, name, f, skips, seen, visit)
}

// Reader returns a Source that decodes one stream — standard input, an
// HTTP answer body — as Files decodes a file called name. The stream is
// read by the first call of Spans; later calls find it consumed.
func Reader(name string, r io.Reader, skips *Skips) Source {
	return Func(func(ctx context.Context, visit Visitor) error {
		return decode(ctx, name, r, skips, NewSeenSpans(), visit)
	})
}

// errTracker keeps the first I/O error (not io.EOF) of the reader below
// a decompressor, to tell corrupt compressed data from a failing disk.
type errTracker struct {
	r   io.Reader
	err error
}

func (t *errTracker) Read(p []byte) (int, error) {
	n, err := t.r.Read(p)
	if err != nil && err != io.EOF && t.err == nil {
		t.err = err
	}
	return n, err
}

// gzipBody turns errors of the gzip data itself into the end of the
// stream, counted as a skip; I/O errors of the file stay errors.
type gzipBody struct {
	z     *gzip.Reader
	under *errTracker
	name  string
	skips *Skips
}

func (g *gzipBody) Read(p []byte) (int, error) {
	n, err := g.z.Read(p)
	if err != nil && err != io.EOF {
		if g.under.err != nil {
			return n, g.under.err
		}
		g.skips.Add(ReasonCorruptGzip, du.Example(g.name, "", err.Error()))
		return n, io.EOF
	}
	return n, err
}

func decode(ctx context.Context, name string, r io.Reader, skips *Skips, seen *SeenSpans, visit Visitor) error {
	return decodeLevel(ctx, name, r, skips, seen, visit, 0)
}

func decodeLevel(ctx context.Context, name string, r io.Reader, skips *Skips, seen *SeenSpans, visit Visitor, level int) error {
	br := bufio.NewReaderSize(r, du.PeekBytes)
	peek, err := br.Peek(du.PeekBytes)
	if err != nil && err != io.EOF && err != bufio.ErrBufferFull {
		return fmt.Errorf("source: %s: %w", name, err)
	}
	if len(du.TrimSpaceBOM(peek)) == 0 && len(peek) < du.PeekBytes {
		skips.Add(ReasonEmpty, name)
		return nil
	}
	format, detail := detect(peek)
	if format == FormatGzip && level == 0 {
		under := &errTracker{r: br}
		z, err := gzip.NewReader(under)
		if err != nil {
			if under.err != nil {
				return fmt.Errorf("source: %s: %w", name, under.err)
			}
			skips.Add(ReasonCorruptGzip, du.Example(name, "", err.Error()))
			return nil
		}
		defer z.Close()
		return decodeLevel(ctx, name, &gzipBody{z: z, under: under, name: name, skips: skips}, skips, seen, visit, level+1)
	}
	var stop error // the visitor's error, returned as is
	v := func(s *model.Span) error {
		if err := ctx.Err(); err != nil {
			stop = err
			return err
		}
		if seen.Repeat(s) {
			skips.Add(ReasonDuplicate, du.Example(name, s.TraceID, "span "+s.SpanID))
			return nil
		}
		if err := visit(s); err != nil {
			stop = err
			return err
		}
		return nil
	}
	switch format {
	case FormatOTLPJSON:
		err = otlpjson.Decode(br, name, v, skips.Add)
	case FormatOTLPProto:
		err = otlpproto.Decode(br, name, v, skips.Add)
	case FormatJaegerJSON:
		err = jaegerjson.Decode(br, name, v, skips.Add)
	default:
		return &FormatError{Name: name, Start: peek[:min(len(peek), 64)], Detail: detail}
	}
	if err == nil || (stop != nil && err == stop) {
		return err
	}
	return fmt.Errorf("source: %s: %w", name, err)
}
