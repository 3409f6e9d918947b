package main

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/bpfvm/bpfvm"
)

// TestMapUpdateReferences puts maps in maps of maps and programs in a
// program array with map update's "value name|id ..." (bpftool's MAP and
// PROG values), in a batch whose program run sees them, and checks the
// refusals: their messages are bpftool 7.1's for the same commands on the
// kernel, where it has them.
func TestMapUpdateReferences(t *testing.T) {
	const obj = "testdata/mapofmaps.o"
	dir := t.TempDir()
	pkt := filepath.Join(dir, "pkt")
	os.WriteFile(pkt, make([]byte, 34), 0o644)
	script := filepath.Join(dir, "script")
	os.WriteFile(script, []byte(strings.ReplaceAll(`prog run name lookup data_in PKT
map update name inner_a key 0 0 0 0 value 7 0 0 0
map update name outer key 0 0 0 0 value name inner_a
map dump name outer
prog run name lookup data_in PKT
map update name inner_b key 0 0 0 0 value 5 0 0 0
map update name outer key 0 0 0 0 value name inner_b
prog run name lookup data_in PKT
map update name outer_hash key 5 0 0 0 value name inner_b
map dump name outer_hash
map update name jumps key 0 0 0 0 value name tail
prog run name lookup data_in PKT
map delete name jumps key 0 0 0 0
map delete name outer key 0 0 0 0
prog run name lookup data_in PKT
`, "PKT", pkt)), 0o644)
	code, stdout, stderr := runCLI(t, "", "batch", obj, script)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	// XDP_DROP (1) with outer empty, inner_a's 7, inner_b's 5,
	// XDP_TX (3) from the tail call, XDP_DROP again.
	var rets []string
	for _, m := range regexp.MustCompile(`Return value: (\d+)`).FindAllStringSubmatch(stdout, -1) {
		rets = append(rets, m[1])
	}
	if got := strings.Join(rets, ","); got != "1,7,5,3,1" {
		t.Errorf("return values %s, want 1,7,5,3,1\n%s", got, stdout)
	}
	// Ids are the process's: inner_a's and inner_b's, one after the other.
	if m := regexp.MustCompile(`key: 00 00 00 00  inner_map_id: (\d+) \nFound 1 element\n(?s:.*)key: 05 00 00 00  inner_map_id: (\d+) \nFound 1 element\n`).FindStringSubmatch(stdout); m == nil || m[2] != fmt.Sprint(atoi(m[1])+1) {
		t.Errorf("map dumps of outer and outer_hash: %q\n%s", m, stdout)
	}
	for _, tc := range []struct {
		mapName string
		value   []string
		code    int
		want    string
	}{
		{"outer", []string{"1", "0", "0", "0"}, 2, "expected 'id', 'name' or 'pinned', got: '1'?"},
		{"outer", []string{"name", "other"}, 1, "update failed: Invalid argument"}, // not the inner maps' shape
		{"outer", []string{"id", "999999"}, 1, "get map by id (999999): No such file or directory"},
		{"outer", []string{"pinned", "/sys/fs/bpf/nope"}, 1, "bpf obj get (/sys/fs/bpf/nope): No such file or directory"},
		{"outer", []string{"name", "nope"}, 1, "can't find map nope"},
		{"outer", []string{"tag", "00"}, 2, "expected 'id', 'name' or 'pinned', got: 'tag'?"},
		{"outer", nil, 2, "not enough value arguments for map in map"},
		{"jumps", nil, 2, "not enough value arguments for map of progs"},
		{"jumps", []string{"1", "2", "3", "4"}, 2, "expected 'id', 'tag', 'name' or 'pinned', got: '1'?"},
		{"jumps", []string{"id", "99999"}, 1, "get by id (99999): No such file or directory"},
		{"jumps", []string{"tag", "0011223344556677"}, 1, "no program with tag 0011223344556677"},
		{"jumps", []string{"name", "tail"}, 0, ""},
		{"outer", []string{"name", "inner_b"}, 0, ""},
	} {
		args := append([]string{"map", "update", obj, tc.mapName, "key", "0", "0", "0", "0", "value"}, tc.value...)
		code, _, stderr := runCLI(t, "", args...)
		if code != tc.code || !strings.Contains(stderr, tc.want) {
			t.Errorf("bpfvm %s: exit %d, stderr %q; want %d, %q", strings.Join(args, " "), code, stderr, tc.code, tc.want)
		}
	}
}

// TestMapUpdateByID refers to maps and programs by the ids map show and
// the loader give them (process-wide, as the kernel's).
func TestMapUpdateByID(t *testing.T) {
	s, err := openSession("testdata/mapofmaps.o", nil, []string{"tail"}, bpfvm.EngineDefault, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.close()
	s.out = &strings.Builder{}
	inner, tail := s.coll.Maps["inner_b"].ID(), s.coll.Programs["tail"].ID()
	for _, cmd := range [][]string{
		{"update", "outer_hash", "key", "5", "0", "0", "0", "value", "id", fmt.Sprint(inner)},
		{"update", "jumps", "key", "1", "0", "0", "0", "value", "id", fmt.Sprint(tail)},
		{"dump", "outer_hash"},
	} {
		if err := s.mapCommand(cmd); err != nil {
			t.Fatalf("map %s: %v", strings.Join(cmd, " "), err)
		}
	}
	if want := fmt.Sprintf("key: 05 00 00 00  inner_map_id: %d \nFound 1 element\n", inner); s.out.(*strings.Builder).String() != want {
		t.Errorf("dump %q, want %q", s.out, want)
	}
	var got uint32
	if err := s.coll.Maps["jumps"].Lookup(uint32(1), &got); err != nil || got != tail {
		t.Errorf("jumps[1] = %d, %v; want program %d", got, err, tail)
	}
}

func atoi(s string) int {
	n := 0
	fmt.Sscan(s, &n)
	return n
}
