package bpfvm

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/btf"

	"github.com/bpfvm/bpfvm/progtype"
)

// IterOptions describe what an iterator program (iter/<target>) walks,
// for Program.Iterate: the host's world, not the kernel's.
type IterOptions struct {
	// Tasks are what iter/task walks, in order: each is shown to the
	// program as a struct task_struct laid out by the target BTF, with
	// its pid, tgid and comm (and zero elsewhere).
	Tasks []Task
	// Map is the map iter/bpf_map_elem walks, element by element (the
	// kernel's link_create map_fd): an array, hash or LRU hash map,
	// per-CPU or not. The program sees the element's key in a read-only
	// buffer and its value in a writable one (for a per-CPU map every
	// CPU's value, each padded to 8 bytes), which the walk writes back
	// to the map when a run changed it.
	Map *Map
	// Maps are what iter/bpf_map walks, in order (the kernel walks every
	// map of the machine by id): each is shown as a struct bpf_map laid
	// out by the target BTF with its id, name, type, flags and sizes.
	Maps []*Map
	// Files are what iter/task_file walks, in order: each task's open
	// files (the kernel shows a process's once, at its leader).
	Files []TaskFile
	// Sockets are what iter/tcp and iter/udp walk, in order: iter/tcp
	// those whose object is a TCP socket's (tcp_sock, tcp6_sock,
	// tcp_timewait_sock, tcp_request_sock: Socket.KernelObject's),
	// iter/udp the udp_sock and udp6_sock ones.
	Sockets []IterSocket
	// Trace is the rest of the world the runs see (memory for the probe
	// reads, the current task...); its Seq is Iterate's own.
	Trace *Trace
	// Net is the host's network and cgroups the runs see (the cgroup
	// kfuncs and iterators), nil for none.
	Net *Net
}

// TaskFile is an open file of a task, as iter/task_file shows it: the
// task's struct task_struct, the fd and the struct file. Iterate adds the
// objects to the runs' world (what they point to, such as the file's
// inode, goes in Trace.Objects).
type TaskFile struct {
	Task *KernelObject
	FD   uint32
	File *KernelObject
}

// IterSocket is a socket as iter/tcp and iter/udp show it: its kernel
// object (Socket.KernelObject), which Iterate adds to the runs' world,
// the uid owning it and, for UDP, its hash bucket.
type IterSocket struct {
	Sock   *KernelObject
	UID    uint32
	Bucket int32
}

// ErrIterTarget is returned by Iterate for a program that is not an
// iterator, or one whose target bpfvm cannot walk.
var ErrIterTarget = errors.New("iterator target not supported")

// iterElem is one element of a walk: what goes in the context's argument
// slots after the meta and in the images (fill, given where the images
// start), and what follows a run that returned 0 (done, given the context
// as the run left it).
type iterElem struct {
	fill func(ctx []byte, image uint32) error
	done func(ctx []byte, image uint32) error
}

// Iterate runs an iterator program over what opts describe, as reading
// the kernel's iterator file does (cilium/ebpf's link.AttachIter and
// Iter.Open): once per element, with meta->seq_num counting from 0, then
// once more with the element NULL (and the last element's seq_num), and
// returns what the runs wrote with
// bpf_seq_printf and bpf_seq_write. A run returning 1 asks the kernel to
// show its element again later; bpfvm drops that run's output and ends
// the walk there, as a read of the file would end.
//
// iter/task walks opts.Tasks, iter/task_file opts.Files, iter/tcp and
// iter/udp opts.Sockets, iter/bpf_map opts.Maps and
// iter/bpf_map_elem the elements of opts.Map, which the attach needs: as
// the kernel's bpf_iter_attach_map, a program that reads further into the
// key or value buffers than the map's key and value go is refused with
// EACCES (errors.Is os.ErrPermission), as is a map of another type with
// EINVAL.
func (p *Program) Iterate(opts *IterOptions) (io.Reader, error) {
	if opts == nil {
		opts = &IterOptions{}
	}
	if p.typ != ebpf.Tracing || p.opts.AttachType != ebpf.AttachTraceIter {
		return nil, fmt.Errorf("program %s: %w: not an iterator", p.name, ErrIterTarget)
	}
	kt := p.opts.KernelTypes
	if kt == nil {
		kt = defaultKernelTypes(p.opts)
	}
	var elems []iterElem
	var last iterElem
	var err error
	var objs []*KernelObject
	switch p.opts.AttachTo {
	case "task":
		elems, err = taskElems(kt, opts.Tasks)
	case "task_file":
		elems, objs = fileElems(opts.Files)
	case "tcp", "udp":
		elems, objs = sockElems(opts.Sockets, p.opts.AttachTo)
	case "bpf_map":
		elems, err = mapListElems(kt, opts.Maps)
	case "bpf_map_elem":
		elems, last, err = p.mapElems(kt, opts.Map)
	default:
		return nil, fmt.Errorf("program %s: %w: iter/%s", p.name, ErrIterTarget, p.opts.AttachTo)
	}
	if err != nil {
		return nil, fmt.Errorf("program %s: %w", p.name, err)
	}
	var out bytes.Buffer
	world := Trace{}
	if opts.Trace != nil {
		world = *opts.Trace
	}
	for _, o := range objs {
		if o != nil && world.ObjectAt(o.Addr) != o {
			world.Objects = append(slices.Clip(world.Objects), o)
		}
	}
	ctx := make([]byte, progtype.IterContextSize)
	ctxOut := make([]byte, progtype.IterContextSize)
	for i := 0; i <= len(elems); i++ {
		clear(ctx)
		// The meta after the argument slots, then the element's images.
		meta, image := uint32(progtype.IterArea), uint32(progtype.IterArea+iterMetaSize)
		binary.NativeEndian.PutUint64(ctx[0:], progtype.IterPointer(meta))
		// meta->seq points at zero bytes (the helpers write to the
		// run's Seq; nothing reads the seq_file itself).
		binary.NativeEndian.PutUint64(ctx[meta:], progtype.IterPointer(uint32(len(ctx)-iterSeqSize)))
		// meta->seq_num: the element's number; the last run's is the
		// last element's, as the kernel counts only elements found.
		binary.NativeEndian.PutUint64(ctx[meta+16:], uint64(min(i, max(len(elems)-1, 0))))
		el := last
		if i < len(elems) {
			el = elems[i]
		}
		if el.fill != nil {
			if err := el.fill(ctx, image); err != nil {
				return nil, fmt.Errorf("program %s: element %d: %w", p.name, i, err)
			}
		}
		var seq bytes.Buffer
		world.Seq = &seq
		res, err := p.Execute(&RunOptions{Context: ctx, ContextOut: ctxOut, Trace: &world, Net: opts.Net})
		if err != nil {
			return nil, fmt.Errorf("program %s: element %d: %w", p.name, i, err)
		}
		if res.R0 != 0 {
			break
		}
		if el.done != nil {
			if err := el.done(ctxOut, image); err != nil {
				return nil, fmt.Errorf("program %s: element %d: %w", p.name, i, err)
			}
		}
		out.Write(seq.Bytes())
	}
	return &out, nil
}

// iterSeqSize is the room for the seq_file at the end of an iterator's
// context: zero bytes the meta points at.
const iterSeqSize = 256

// taskElems are iter/task's elements: each task's image.
func taskElems(kt *btf.Spec, tasks []Task) ([]iterElem, error) {
	layout, err := taskLayoutOf(kt)
	if err != nil {
		return nil, err
	}
	elems := make([]iterElem, len(tasks))
	for i := range tasks {
		elems[i].fill = func(ctx []byte, image uint32) error {
			layout.fill(ctx[image:], &tasks[i])
			binary.NativeEndian.PutUint64(ctx[8:], progtype.IterPointer(image))
			return nil
		}
	}
	return elems, nil
}

// fileElems are iter/task_file's elements (bpf_iter__task_file: meta,
// task, fd, file) and the objects they point to.
func fileElems(files []TaskFile) ([]iterElem, []*KernelObject) {
	elems := make([]iterElem, len(files))
	var objs []*KernelObject
	for i := range files {
		f := &files[i]
		objs = append(objs, f.Task, f.File)
		elems[i].fill = func(ctx []byte, _ uint32) error {
			binary.NativeEndian.PutUint64(ctx[8:], objAddr(f.Task))
			binary.NativeEndian.PutUint64(ctx[16:], uint64(f.FD))
			binary.NativeEndian.PutUint64(ctx[24:], objAddr(f.File))
			return nil
		}
	}
	return elems, objs
}

// sockElems are iter/tcp's (bpf_iter__tcp: meta, sk_common, uid) or
// iter/udp's (bpf_iter__udp: meta, udp_sk, uid, bucket) elements: the
// sockets of the protocol, by their objects' types.
func sockElems(socks []IterSocket, proto string) ([]iterElem, []*KernelObject) {
	var elems []iterElem
	var objs []*KernelObject
	for i := range socks {
		s := &socks[i]
		if s.Sock == nil || s.Sock.Type == nil || !strings.HasPrefix(s.Sock.Type.TypeName(), proto) {
			continue
		}
		objs = append(objs, s.Sock)
		elems = append(elems, iterElem{fill: func(ctx []byte, _ uint32) error {
			binary.NativeEndian.PutUint64(ctx[8:], s.Sock.Addr)
			binary.NativeEndian.PutUint64(ctx[16:], uint64(s.UID))
			binary.NativeEndian.PutUint64(ctx[24:], uint64(int64(s.Bucket)))
			return nil
		}})
	}
	return elems, objs
}

// objAddr is the address of o, 0 for none.
func objAddr(o *KernelObject) uint64 {
	if o == nil {
		return 0
	}
	return o.Addr
}

// iterMetaSize is the size of struct bpf_iter_meta (seq, session_id,
// seq_num).
const iterMetaSize = 24

// taskLayout is where struct task_struct holds what a Task gives, by the
// target BTF.
type taskLayout struct {
	size            uint32
	pid, tgid, comm uint32
}

func taskLayoutOf(spec *btf.Spec) (*taskLayout, error) {
	if spec == nil {
		return nil, fmt.Errorf("no kernel BTF for task_struct images")
	}
	var task *btf.Struct
	if err := spec.TypeByName("task_struct", &task); err != nil {
		return nil, fmt.Errorf("task_struct images: %w", err)
	}
	l := &taskLayout{size: task.Size}
	for _, f := range []struct {
		name string
		off  *uint32
	}{{"pid", &l.pid}, {"tgid", &l.tgid}, {"comm", &l.comm}} {
		off, ok := memberOffset(task.Members, f.name)
		if !ok {
			return nil, fmt.Errorf("task_struct images: no member %s", f.name)
		}
		*f.off = off
	}
	if l.size+8 > progtype.IterContextSize-progtype.IterArea-iterMetaSize-iterSeqSize {
		return nil, fmt.Errorf("task_struct of %d bytes does not fit an iterator's context", l.size)
	}
	return l, nil
}

// fill writes the image of t into b.
func (l *taskLayout) fill(b []byte, t *Task) {
	binary.NativeEndian.PutUint32(b[l.pid:], t.PID)
	binary.NativeEndian.PutUint32(b[l.tgid:], t.TGID)
	comm := b[l.comm : l.comm+16]
	copy(comm[:15], t.Comm)
}

// memberOffset finds a member's byte offset by name, looking into
// anonymous structs and unions.
func memberOffset(ms []btf.Member, name string) (uint32, bool) {
	for _, m := range ms {
		if m.Name == name {
			return uint32(m.Offset.Bytes()), true
		}
		if m.Name != "" {
			continue
		}
		var inner []btf.Member
		switch u := btf.UnderlyingType(m.Type).(type) {
		case *btf.Struct:
			inner = u.Members
		case *btf.Union:
			inner = u.Members
		}
		if off, ok := memberOffset(inner, name); ok {
			return uint32(m.Offset.Bytes()) + off, true
		}
	}
	return 0, false
}
