package maps

import (
	"errors"
	"runtime"
	"syscall"
	"testing"
	"unsafe"

	"github.com/cilium/ebpf/btf"
	"golang.org/x/sys/unix"
)

// TestFieldsKernel creates each case's map in the kernel, with the same
// key and value BTF, and compares the errno with ours. It calls bpf()
// itself: cilium/ebpf retries a creation refused with EINVAL without the
// BTF, which would hide the kernel's verdict.
func TestFieldsKernel(t *testing.T) {
	requireKernelMaps(t)
	agree := 0
	cases := fieldCases()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := c.spec()
			m, err := New(s, Options{NumCPU: 2})
			if err == nil {
				m.Close()
			}
			ours := errnoOf(err)
			kernel, err := kernelCreateBTF(s)
			if err != nil {
				t.Skipf("no kernel map: %v", err)
			}
			if ours != kernel {
				t.Errorf("ours errno %d (%v), kernel %d (%v)", ours, ours, kernel, kernel)
				return
			}
			agree++
		})
	}
	t.Logf("%d of %d creations agree with the kernel", agree, len(cases))
}

// kernelCreateBTF creates the map of s in the kernel with a u32 key (none
// for data sections) and s.Value as BTF, and returns the errno (0: the map
// was created, and is closed again).
func kernelCreateBTF(s Spec) (syscall.Errno, error) {
	var b btf.Builder
	var keyID btf.TypeID
	if _, sec := s.Value.(*btf.Datasec); !sec {
		id, err := b.Add(btfU32)
		if err != nil {
			return 0, err
		}
		keyID = id
	}
	valueID, err := b.Add(s.Value)
	if err != nil {
		return 0, err
	}
	h, err := btf.NewHandle(&b)
	if errno := syscall.Errno(0); errors.As(err, &errno) {
		return errno, nil // loading the BTF failed
	}
	if err != nil {
		return 0, err
	}
	defer h.Close()
	var attr [72]byte
	put := func(off int, v uint32) { *(*uint32)(unsafe.Pointer(&attr[off])) = v }
	put(0, uint32(s.Type))
	put(4, s.KeySize)
	put(8, s.ValueSize)
	put(12, s.MaxEntries)
	put(16, s.Flags)
	put(48, uint32(h.FD()))
	put(52, uint32(keyID))
	put(56, uint32(valueID))
	fd, _, errno := unix.Syscall(unix.SYS_BPF, unix.BPF_MAP_CREATE, uintptr(unsafe.Pointer(&attr[0])), unsafe.Sizeof(attr))
	runtime.KeepAlive(&attr)
	if errno != 0 {
		return errno, nil
	}
	unix.Close(int(fd))
	return 0, nil
}
