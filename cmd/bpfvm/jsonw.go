package main

import (
	"bytes"
	"encoding/json"
	"io"
	"strconv"
	"strings"
)

// jsonWriter writes JSON as a stream, laid out as bpftool's json_writer
// lays it out when pretty: a newline and four spaces a level before each
// object member and each closing bracket of a non-empty container, none
// before array elements ("[{", "},{", "[1,2,3\n    ]"). Compact, it writes
// what encoding/json writes.
type jsonWriter struct {
	w      io.Writer
	b      bytes.Buffer
	pretty bool
	depth  int
	sep    bool // the next value or member needs a comma
}

func newJSONWriter(w io.Writer, pretty bool) *jsonWriter {
	return &jsonWriter{w: w, pretty: pretty}
}

func (j *jsonWriter) eol() {
	if j.pretty {
		j.b.WriteByte('\n')
		j.b.WriteString(strings.Repeat("    ", j.depth))
	}
}

func (j *jsonWriter) comma() {
	if j.sep {
		j.b.WriteByte(',')
	}
	j.sep = true
}

func (j *jsonWriter) begin(c byte) {
	j.comma()
	j.b.WriteByte(c)
	j.depth++
	j.sep = false
}

func (j *jsonWriter) end(c byte) {
	j.depth--
	if j.sep {
		j.eol()
	}
	j.b.WriteByte(c)
	j.sep = true
}

func (j *jsonWriter) startObject() { j.begin('{') }
func (j *jsonWriter) endObject()   { j.end('}') }
func (j *jsonWriter) startArray()  { j.begin('[') }
func (j *jsonWriter) endArray()    { j.end(']') }

// name starts an object member.
func (j *jsonWriter) name(s string) {
	j.comma()
	j.eol()
	j.sep = false
	j.b.Write(quoteJSON(s))
	j.b.WriteByte(':')
	if j.pretty {
		j.b.WriteByte(' ')
	}
}

// raw writes a value already in JSON (a number, true, null).
func (j *jsonWriter) raw(s string) {
	j.comma()
	j.b.WriteString(s)
}

func (j *jsonWriter) str(s string) { j.raw(string(quoteJSON(s))) }

func (j *jsonWriter) uint(v uint64) { j.raw(strconv.FormatUint(v, 10)) }

func (j *jsonWriter) int(v int64) { j.raw(strconv.FormatInt(v, 10)) }

// hexBytes writes bytes as bpftool's print_hex_data_json: ["0x01",...].
func (j *jsonWriter) hexBytes(b []byte) {
	j.startArray()
	for _, c := range b {
		j.raw(`"0x` + hex2(c) + `"`)
	}
	j.endArray()
}

func hex2(c byte) string {
	const digits = "0123456789abcdef"
	return string([]byte{digits[c>>4], digits[c&15]})
}

// flush ends the document with a newline, as jsonw_destroy, and writes it.
func (j *jsonWriter) flush() error {
	j.b.WriteByte('\n')
	_, err := j.w.Write(j.b.Bytes())
	j.b.Reset()
	j.sep = false
	return err
}

// value writes an encoding/json document through the writer, keeping its
// members' order, so that any marshalled value gets bpftool's layout.
func (j *jsonWriter) value(doc []byte) error {
	dec := json.NewDecoder(bytes.NewReader(doc))
	dec.UseNumber()
	// Object members alternate name, value: track which comes next.
	var inObject []bool
	expectName := false
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		if expectName {
			if s, ok := tok.(string); ok {
				j.name(s)
				expectName = false
				continue
			}
		}
		switch t := tok.(type) {
		case json.Delim:
			switch t {
			case '{':
				j.startObject()
				inObject = append(inObject, true)
			case '[':
				j.startArray()
				inObject = append(inObject, false)
			case '}':
				j.endObject()
				inObject = inObject[:len(inObject)-1]
			case ']':
				j.endArray()
				inObject = inObject[:len(inObject)-1]
			}
		case string:
			j.str(t)
		case json.Number:
			j.raw(t.String())
		case bool:
			j.raw(strconv.FormatBool(t))
		case nil:
			j.raw("null")
		}
		expectName = len(inObject) > 0 && inObject[len(inObject)-1] && dec.More()
	}
}

// quoteJSON quotes a string as encoding/json does, without escaping <, >
// and & (bpftool writes them as they are).
func quoteJSON(s string) []byte {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.Encode(s)
	return bytes.TrimSuffix(b.Bytes(), []byte{'\n'})
}
