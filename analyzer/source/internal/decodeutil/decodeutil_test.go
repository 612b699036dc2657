package decodeutil

import (
	"bufio"
	"encoding/json"
	"io"
	"strings"
	"testing"
)

func TestHexID(t *testing.T) {
	for in, want := range map[string]string{
		"4BF92F3577B34DA6A3CE929D0E0E4736":  "4bf92f3577b34da6a3ce929d0e0e4736",
		"a3ce929d0e0e4736":                  "0000000000000000a3ce929d0e0e4736",
		"S/kvNXezTaajzpKdDg5HNg==":          "4bf92f3577b34da6a3ce929d0e0e4736",
		"S_kvNXezTaajzpKdDg5HNg":            "4bf92f3577b34da6a3ce929d0e0e4736",
		"00000000000000000000000000000000":  "",
		"":                                  "",
		"xyz":                               "",
		"4bf92f3577b34da6a3ce929d0e0e47360": "",
	} {
		got, ok := HexID(in, 16)
		if got != want || ok != (want != "") {
			t.Errorf("HexID(%q) = %q, %t; want %q", in, got, ok, want)
		}
	}
}

func TestReadLine(t *testing.T) {
	br := bufio.NewReaderSize(strings.NewReader("short\r\n"+strings.Repeat("x", 40)+"\n\nlast"), 16)
	var got []string
	for {
		line, tooLong, err := ReadLine(br, nil, 20)
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if tooLong {
			got = append(got, "LONG")
			continue
		}
		got = append(got, string(line))
	}
	if strings.Join(got, "|") != "short\r|LONG||last" {
		t.Errorf("lines %q", got)
	}
}

func TestReaderStreamLine(t *testing.T) {
	r := NewReader(bufio.NewReader(strings.NewReader("[\n1,\n2,\n\n3]")))
	dec := json.NewDecoder(r)
	_, _ = dec.Token()
	lines := []int{}
	for dec.More() {
		lines = append(lines, r.Line(dec))
		var n int
		_ = dec.Decode(&n)
	}
	if len(lines) != 3 || lines[0] != 2 || lines[1] != 3 || lines[2] != 5 {
		t.Errorf("lines %v, want [2 3 5]", lines)
	}
}

func TestTopKeys(t *testing.T) {
	open, keys := TopKeys([]byte("\xef\xbb\xbf [ {\"a\": {\"x\":[1,2]}, \"b\": 2, \"c\": [tru"))
	if open != '[' || strings.Join(keys, ",") != "a,b,c" {
		t.Errorf("TopKeys = %c %v", open, keys)
	}
}
