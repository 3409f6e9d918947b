package bpfvm_test

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/bpfvm/bpfvm"
	"github.com/bpfvm/bpfvm/loader"
	bpfmaps "github.com/bpfvm/bpfvm/maps"
)

// graphSeqs are runs of testdata/graph.c's programs in one collection
// ("prog:len" runs on a zeroed packet of len bytes, 64 by default), with
// the kernel's results (testdata/libbpf/graphrun on Linux 6.18).
var graphSeqs = []struct {
	steps []string
	want  []int32
}{
	{[]string{"obj_new_drop"}, []int32{42}},
	{[]string{"list_order"}, []int32{-896789}},
	{[]string{"rbtree_order"}, []int32{4621359}},
	{[]string{"rbtree_walk"}, []int32{2010401}},
	{[]string{"refcounted", "refcounted"}, []int32{771, 771}},
	{[]string{"list_add:20", "list_add:31", "list_sum", "list_sum"}, []int32{0, 0, 5102, 0}},
	{[]string{"rbtree_add_one:30", "rbtree_add_one:20", "rbtree_take", "rbtree_take", "rbtree_take"}, []int32{0, 0, 40, 60, -1}},
	{[]string{"rbtree_mix:64", "rbtree_mix:77", "rbtree_mix:14"}, nil},
	{[]string{"map_list_add:15", "map_list_add:16", "map_list_del", "map_list_add:17", "map_list_count", "map_list_count"}, []int32{0, 0, 0, 0, 7, 0}},
	// Left in the maps for their destructors.
	{[]string{"list_add:25", "rbtree_add_one:19", "map_list_add:33", "refcounted"}, []int32{0, 0, 0, 771}},
}

// graphStep splits "prog:len".
func graphStep(s string) (string, int) {
	name, l, ok := strings.Cut(s, ":")
	if !ok {
		return name, 64
	}
	n, _ := strconv.Atoi(l)
	return name, n
}

// testdata/graph.c's programs allocate objects and keep them in lists and
// rbtrees of map values, on both engines, checked and unchecked: the
// results are the kernel's (compared live where the kernel can be asked
// through libbpf), and every object is freed once the maps go, the ones
// left in them included.
func TestGraphPrograms(t *testing.T) {
	spec, err := loader.LoadCollectionSpec("testdata/graph.o")
	if err != nil {
		t.Fatal(err)
	}
	bin := graphRun(t)
	base := bpfmaps.LiveObjects()
	agreed := 0
	for _, seq := range graphSeqs {
		want := seq.want
		if bin != "" {
			var kern []int32
			for _, r := range kernelGraphRuns(t, bin, "testdata/graph.o", seq.steps) {
				n, _ := strconv.Atoi(r)
				kern = append(kern, int32(n))
			}
			if want != nil && !slices.Equal(kern, want) {
				t.Errorf("%v: the kernel gives %v, the table %v", seq.steps, kern, want)
			}
			want = kern
		}
		for _, e := range []bpfvm.Engine{bpfvm.EngineInterpreter, bpfvm.EngineJIT} {
			for _, checks := range []bpfvm.Checks{bpfvm.ChecksOn, bpfvm.ChecksOff} {
				coll, err := bpfvm.NewCollectionWithOptions(spec, bpfvm.CollectionOptions{Programs: bpfvm.ProgramOptions{Engine: e, Checks: checks}})
				if err != nil {
					t.Fatal(err)
				}
				var got []int32
				for _, s := range seq.steps {
					name, n := graphStep(s)
					res, err := coll.Programs[name].Execute(&bpfvm.RunOptions{Data: make([]byte, n)})
					if err != nil {
						t.Fatalf("%s on %v checks %v: %v", name, e, checks, err)
					}
					got = append(got, int32(res.R0))
				}
				if want != nil && !slices.Equal(got, want) {
					t.Errorf("%v on %v checks %v: %v, want %v", seq.steps, e, checks, got, want)
				} else if want != nil {
					agreed += len(got)
				}
				coll.Close()
				waitObjects(t, base, fmt.Sprintf("%v on %v checks %v, after close", seq.steps, e, checks))
			}
		}
	}
	t.Logf("%d runs agree with the kernel's results", agreed)
}

// testdata/graph_fail.c's programs are refused as the kernel refuses
// them, with one of the kernel's error lines; those named ok_* load.
func TestGraphRejections(t *testing.T) {
	spec, err := loader.LoadCollectionSpec("testdata/graph_fail.o")
	if err != nil {
		t.Fatal(err)
	}
	bin := graphRun(t)
	agreed := 0
	for _, name := range slices.Sorted(maps.Keys(spec.Programs)) {
		t.Run(name, func(t *testing.T) {
			coll, err := bpfvm.NewCollectionWithOptions(spec, bpfvm.CollectionOptions{ProgramNames: []string{name}})
			if err == nil {
				coll.Close()
			}
			var ve *bpfvm.VerifierError
			if err != nil && !errors.As(err, &ve) {
				t.Fatalf("not a verifier error: %v", err)
			}
			if strings.HasPrefix(name, "ok_") != (err == nil) {
				t.Errorf("verdict: %v", err)
			}
			if bin == "" {
				return
			}
			ok, kmsg := kernelGraphVerdict(t, bin, "testdata/graph_fail.o", name)
			switch {
			case ok && err == nil:
				agreed++
			case ok:
				t.Errorf("kernel accepts, bpfvm: %v", err)
			case err == nil:
				t.Errorf("kernel rejects (%q), bpfvm accepts", kmsg)
			default:
				msg := ve.Cause.Error()
				if !slices.Contains(kmsg, msg) {
					t.Errorf("bpfvm: %q, kernel: %q", msg, kmsg)
				} else {
					agreed++
				}
			}
		})
	}
	t.Logf("%d verdicts agree with the kernel's", agreed)
}

// BenchmarkGraph runs testdata/graph.c's benchmarks: 32 objects allocated
// and dropped (bench_obj), 32 keys added to an rbtree and removed
// (bench_rbtree). TestGraphSpeed compares them with the kernel.
func BenchmarkGraph(b *testing.B) {
	spec, err := loader.LoadCollectionSpec("testdata/graph.o")
	if err != nil {
		b.Fatal(err)
	}
	for _, e := range []bpfvm.Engine{bpfvm.EngineJIT, bpfvm.EngineInterpreter} {
		coll, err := bpfvm.NewCollectionWithOptions(spec, bpfvm.CollectionOptions{ProgramNames: []string{"bench_obj", "bench_rbtree"}, Programs: bpfvm.ProgramOptions{Engine: e}})
		if err != nil {
			b.Fatal(err)
		}
		for _, name := range []string{"bench_obj", "bench_rbtree"} {
			b.Run(fmt.Sprintf("%s/%v", name, e), func(b *testing.B) {
				opts := &bpfvm.RunOptions{Data: make([]byte, 64)}
				for b.Loop() {
					res, err := coll.Programs[name].Execute(opts)
					if err != nil || res.R0 != 496 {
						b.Fatal(res.R0, err)
					}
				}
			})
		}
		coll.Close()
	}
}
