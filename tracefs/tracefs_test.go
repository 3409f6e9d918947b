package tracefs_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"os"
	"testing"

	"github.com/cilium/ebpf/btf"

	"github.com/bpfvm/bpfvm/tracefs"
)

func parseFile(t *testing.T, name string) *tracefs.Format {
	t.Helper()
	b, err := os.ReadFile("testdata/" + name + ".format")
	if err != nil {
		t.Fatal(err)
	}
	f, err := tracefs.Parse(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// TestFormatFromBTF: the layouts the host kernel's tracefs gave (its
// format files, recorded in testdata) equal those bpfvm derives from the
// same kernel's BTF, field for field.
func TestFormatFromBTF(t *testing.T) {
	spec, err := btf.LoadKernelSpec()
	if err != nil {
		t.Skip(err)
	}
	for event, class := range map[string]string{
		"sched_switch":       "sched_switch",
		"sched_process_exec": "sched_process_exec",
		"sched_process_fork": "sched_process_fork",
		"netif_receive_skb":  "net_dev_template",
	} {
		file := parseFile(t, event)
		fromBTF, err := tracefs.FromBTF(spec, class)
		if err != nil {
			t.Errorf("%s: %v", event, err)
			continue
		}
		if len(file.Fields) != len(fromBTF.Fields) {
			t.Errorf("%s: %d fields in tracefs, %d from BTF", event, len(file.Fields), len(fromBTF.Fields))
			continue
		}
		for i, a := range file.Fields {
			b := fromBTF.Fields[i]
			if a.Name != b.Name || a.Offset != b.Offset || a.Size != b.Size || a.Signed != b.Signed || a.DataLoc != b.DataLoc {
				t.Errorf("%s: tracefs %+v, BTF %+v", event, a, b)
			}
		}
	}
}

func TestParse(t *testing.T) {
	f := parseFile(t, "sched_switch")
	if f.Name != "sched_switch" || f.ID == 0 || f.Size() != 64 {
		t.Fatalf("%s id %d size %d", f.Name, f.ID, f.Size())
	}
	if fl := f.Field("prev_comm"); fl == nil || fl.Offset != 8 || fl.Size != 16 || fl.Type != "char[16]" {
		t.Errorf("prev_comm: %+v", fl)
	}
	if fl := parseFile(t, "sys_enter_openat").Field("filename"); fl == nil || fl.Offset != 24 || fl.Type != "const char *" {
		t.Errorf("filename: %+v", fl)
	}
	for _, bad := range []string{"", "name: x\n", "name: x\nformat:\n\tfield:int a;\toffset:x;\tsize:4;\tsigned:1;\n", "name: x\n\tfield:int;\toffset:0;\tsize:4;\tsigned:1;\n"} {
		if _, err := tracefs.Parse(bytes.NewReader([]byte(bad))); !errors.Is(err, tracefs.ErrInvalidFormat) {
			t.Errorf("%q: %v", bad, err)
		}
	}
}

func TestRecord(t *testing.T) {
	f := parseFile(t, "sched_process_exec")
	rec, err := f.Record(map[string]any{"filename": "/bin/true", "pid": 42, "old_pid": uint32(41), "common_pid": 42})
	if err != nil {
		t.Fatal(err)
	}
	loc := binary.NativeEndian.Uint32(rec[f.Field("filename").Offset:])
	off, n := int(loc&0xffff), int(loc>>16)
	if string(rec[off:off+n]) != "/bin/true\x00" || binary.NativeEndian.Uint32(rec[f.Field("pid").Offset:]) != 42 {
		t.Errorf("record %x", rec)
	}
	if _, err := f.Record(map[string]any{"nope": 1}); err == nil {
		t.Error("unknown field accepted")
	}
	if _, err := f.Record(map[string]any{"pid": 1.5}); err == nil {
		t.Error("float accepted")
	}
	if _, err := tracefs.Load(nil, "..", "x"); !errors.Is(err, tracefs.ErrNotFound) {
		t.Errorf("load ..: %v", err)
	}
}

// FuzzParse: no input makes Parse panic, and what it accepts builds
// records.
func FuzzParse(f *testing.F) {
	for _, n := range []string{"sched_switch", "sched_process_exec", "sys_enter_openat"} {
		b, _ := os.ReadFile("testdata/" + n + ".format")
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		fm, err := tracefs.Parse(bytes.NewReader(b))
		if err != nil {
			return
		}
		if _, err := fm.Record(map[string]any{fm.Fields[0].Name: 1}); err != nil && fm.Fields[0].Size <= 8 && !fm.Fields[0].DataLoc && fm.Fields[0].Size&(fm.Fields[0].Size-1) == 0 && fm.Fields[0].Size != 0 {
			t.Fatalf("record: %v", err)
		}
	})
}
