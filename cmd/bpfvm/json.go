package main

import (
	"encoding/json"
	"flag"
	"io"
)

// jsonOutput is bpftool's -j/--json and -p/--pretty: the command prints
// one JSON document instead of text, and errors as {"error": "..."} on
// stdout, as bpftool's p_err does in JSON mode.
type jsonOutput struct {
	on, pretty bool
}

// addJSONFlags registers --json and --pretty on a command; -j too where
// the command has no other -j (veristat's is its jobs).
func addJSONFlags(fs *flag.FlagSet, short bool) *jsonOutput {
	j := &jsonOutput{}
	fs.BoolVar(&j.on, "json", false, "JSON output, as bpftool -j")
	fs.BoolVar(&j.pretty, "pretty", false, "pretty-printed JSON output, as bpftool -p")
	if short {
		fs.BoolVar(&j.on, "j", false, "short for --json")
	}
	return j
}

// enabled reports whether the command prints JSON (--pretty implies it,
// as bpftool's -p implies -j).
func (j *jsonOutput) enabled() bool { return j != nil && (j.on || j.pretty) }

// write prints v as one JSON document and a newline, laid out as
// bpftool's json_writer when pretty.
func (j *jsonOutput) write(w io.Writer, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	jw := newJSONWriter(w, j.pretty)
	if err := jw.value(b); err != nil {
		return err
	}
	return jw.flush()
}

// writer returns a streaming writer for the command's document.
func (j *jsonOutput) writer(w io.Writer) *jsonWriter { return newJSONWriter(w, j.pretty) }

// globalJSON takes bpftool's global -j/--json and -p/--pretty before the
// command name (bpfvm -j version) and passes them on to the command as
// --json and --pretty.
func globalJSON(args []string) []string {
	var flags []string
	for len(args) > 0 {
		switch args[0] {
		case "-j", "--json", "-json":
			flags = append(flags, "--json")
		case "-p", "--pretty", "-pretty":
			flags = append(flags, "--pretty")
		default:
			if len(flags) == 0 {
				return args
			}
			return append([]string{args[0]}, append(flags, args[1:]...)...)
		}
		args = args[1:]
	}
	return args
}

// jsonError is bpftool's error object in JSON mode.
type jsonError struct {
	Error string `json:"error"`
}

// wantsJSON reports whether a command line asks for JSON output, for the
// error of a command that failed before it could print any.
func wantsJSON(args []string) bool {
	for _, a := range args {
		switch a {
		case "--":
			return false
		case "--json", "-json", "--pretty", "-pretty":
			return true
		}
	}
	return false
}
