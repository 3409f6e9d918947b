package main

import (
	"strings"
	"testing"
)

func TestEmbed(t *testing.T) {
	var out strings.Builder
	if err := run(&out); err != nil {
		t.Fatal(err)
	}
	want := `class 2 /index.html    verdict 1 (ctx verdict 1)
class 2 /admin/users   verdict 0 (ctx verdict 0)
class 0 /admin/users   verdict 1 (ctx verdict 1)
class 1 /adm           verdict 1 (ctx verdict 1)
class 0: 1 decisions
class 1: 1 decisions
class 2: 2 decisions
host_audit called 4 times
`
	if out.String() != want {
		t.Errorf("got\n%s\nwant\n%s", out.String(), want)
	}
}
