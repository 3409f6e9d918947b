package helper

import (
	"math"

	"github.com/bpfvm/bpfvm/vm"
)

// strtolHelpers parse numbers (kernel/bpf/helpers.c).
var strtolHelpers = []Helper{
	{Proto: Proto{Name: "bpf_strtol", Args: [5]ArgType{ArgMem, ArgConstSize, ArgAnything, ArgPtrToLong}}, Func: helperStrtol},
	{Proto: Proto{Name: "bpf_strtoul", Args: [5]ArgType{ArgMem, ArgConstSize, ArgAnything, ArgPtrToLong}}, Func: helperStrtoul},
}

// strtoxBaseMask is BPF_STRTOX_BASE_MASK: the flags of bpf_strtol and
// bpf_strtoul hold the base in their low bits, and nothing else.
const strtoxBaseMask = 0x1f

// strtoxMaxLen is how much of the buffer the kernel parses: it copies at
// most 63 bytes after whitespace and sign to a NUL-terminated string.
const strtoxMaxLen = 63

// parseUint parses buf as the kernel's __bpf_strtoull: leading whitespace,
// an optional '-', then digits in base (0: 0x/0X prefix for 16, 0 for 8,
// else 10; 16 accepts a 0x prefix). It returns the value, whether a '-'
// was seen and the bytes consumed, or a negative errno.
func parseUint(buf []byte, flags uint64) (v uint64, negative bool, consumed int, errno int64) {
	base := flags & strtoxBaseMask
	if len(buf) == 0 || base != 0 && base != 8 && base != 10 && base != 16 || flags&^strtoxBaseMask != 0 {
		return 0, false, 0, -einval
	}
	i := 0
	// The kernel's isspace also takes Latin-1's non-breaking space.
	for i < len(buf) && (isSpace(buf[i]) || buf[i] == 0xa0) {
		i++
	}
	if i < len(buf) && buf[i] == '-' {
		negative = true
		i++
	}
	if i == len(buf) {
		return 0, false, 0, -einval
	}
	s := buf[i:min(len(buf), i+strtoxMaxLen)]
	// The kernel's copy stops at a NUL.
	for j, c := range s {
		if c == 0 {
			s = s[:j]
			break
		}
	}
	at := func(j int) byte {
		if j < len(s) {
			return s[j]
		}
		return 0
	}
	j := 0
	if base == 0 {
		switch {
		case at(0) == '0' && at(1)|0x20 == 'x' && isHex(at(2)):
			base = 16
		case at(0) == '0':
			base = 8
		default:
			base = 10
		}
	}
	if base == 16 && at(0) == '0' && at(1)|0x20 == 'x' {
		j = 2
	}
	start, overflow := j, false
	for ; j < len(s); j++ {
		d := digit(s[j])
		if d >= base {
			break
		}
		// Like the kernel's _parse_integer, keep parsing past an overflow.
		if v > (math.MaxUint64-d)/base {
			overflow = true
		}
		v = v*base + d
	}
	if overflow {
		return 0, false, 0, -erange
	}
	if j == start {
		return 0, false, 0, -einval
	}
	return v, negative, i + j, 0
}

func isHex(c byte) bool { return digit(c) < 16 }

// digit returns the value of a digit in bases up to 16, or 16.
func digit(c byte) uint64 {
	switch {
	case c >= '0' && c <= '9':
		return uint64(c - '0')
	case c|0x20 >= 'a' && c|0x20 <= 'f':
		return uint64(c|0x20-'a') + 10
	}
	return 16
}

// strtoxArgs validates the buffer and result arguments of bpf_strtol and
// bpf_strtoul and clears the result, as the kernel does first.
func strtoxArgs(e *vm.Env, r1, r2, r4 uint64) ([]byte, *uint64, error) {
	res, err := memArg(e, r4, 8, true)
	if err != nil {
		return nil, nil, err
	}
	buf, err := e.Bytes(r1, uint64(uint32(r2)), false)
	if err != nil {
		return nil, nil, err
	}
	p := (*uint64)(res)
	*p = 0
	return buf, p, nil
}

// helperStrtol is bpf_strtol(buf, buf_len, flags, res): it parses a signed
// integer and stores it as an s64 at res, returning the bytes consumed, or
// -EINVAL (no digits, bad flags) or -ERANGE (out of range).
func helperStrtol(e *vm.Env, r1, r2, r3, r4, _ uint64) (uint64, error) {
	buf, res, err := strtoxArgs(e, r1, r2, r4)
	if err != nil {
		return 0, err
	}
	v, negative, n, errno := parseUint(buf, r3)
	if errno < 0 {
		return uint64(errno), nil
	}
	if negative {
		if int64(-v) > 0 {
			return neg(erange), nil
		}
		v = -v
	} else if int64(v) < 0 {
		return neg(erange), nil
	}
	*res = v
	return uint64(n), nil
}

// helperStrtoul is bpf_strtoul(buf, buf_len, flags, res): bpf_strtol for
// unsigned integers; a '-' gives -EINVAL.
func helperStrtoul(e *vm.Env, r1, r2, r3, r4, _ uint64) (uint64, error) {
	buf, res, err := strtoxArgs(e, r1, r2, r4)
	if err != nil {
		return 0, err
	}
	v, negative, n, errno := parseUint(buf, r3)
	if errno < 0 {
		return uint64(errno), nil
	}
	if negative {
		return neg(einval), nil
	}
	*res = v
	return uint64(n), nil
}
