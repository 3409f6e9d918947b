package helper

import (
	"bytes"
	"encoding/binary"
	"strconv"
	"sync"

	"github.com/bpfvm/bpfvm/runner"
	"github.com/bpfvm/bpfvm/vm"
)

// printkHelpers format strings (kernel/trace/bpf_trace.c,
// kernel/bpf/helpers.c). bpf_trace_printk's R3-R5 are read unchecked, as
// in the kernel.
var printkHelpers = []Helper{
	{Proto: Proto{Name: "bpf_trace_printk", Args: [5]ArgType{ArgMem, ArgConstSize}}, Func: helperTracePrintk},
	{Proto: Proto{Name: "bpf_trace_vprintk", Args: [5]ArgType{ArgMem, ArgConstSize, ArgMemOrNull, ArgConstSizeOrZero}}, Func: helperTraceVprintk},
	{Proto: Proto{Name: "bpf_snprintf", Args: [5]ArgType{ArgWriteMemOrNull, ArgConstSizeOrZero, ArgConstStr, ArgMemOrNull, ArgConstSizeOrZero}}, Func: helperSnprintf},
}

// Limits of the kernel's printf-like helpers.
const (
	maxTracePrintkArgs = 3    // MAX_TRACE_PRINTK_VARARGS
	maxBprintfArgs     = 12   // MAX_BPRINTF_VARARGS
	maxBprintfBinArgs  = 512  // MAX_BPRINTF_BIN_ARGS: room for copied arguments
	maxBprintfBuf      = 1024 // MAX_BPRINTF_BUF: bpf_trace_printk's buffer
	maxFieldWidth      = 1<<23 - 1
)

// tracePrefix starts each line of trace output, as the name of the
// tracepoint does in the kernel's trace_pipe.
const tracePrefix = "bpf_trace_printk: "

// traceMu serializes writes of trace output: an io.Writer need not be safe
// for concurrent use, and runs on all runners may print at once.
var traceMu sync.Mutex

// fmtBuf collects formatted output up to limit bytes while counting the
// length of the whole, as the kernel's vsnprintf returns it.
type fmtBuf struct {
	b     []byte
	limit int // most bytes kept in b
	n     int // length of the whole output
	size  int // the output buffer's size, NUL included (see verbatim)
}

func (w *fmtBuf) write(s []byte) {
	w.n += len(s)
	if room := w.limit - len(w.b); room > 0 {
		w.b = append(w.b, s[:min(len(s), room)]...)
	}
}

// verbatim writes output that bpf_bprintf_prepare formatted ahead (%pks,
// %pus, %pB, %pI4 and friends). The kernel's bstr_printf copies it only
// while the output buffer has room, and leaves it out of the returned
// length otherwise; so does verbatim.
func (w *fmtBuf) verbatim(s []byte) {
	if w.n < w.size {
		w.write(s)
	}
}

func (w *fmtBuf) writeByte(c byte) {
	w.n++
	if len(w.b) < w.limit {
		w.b = append(w.b, c)
	}
}

func (w *fmtBuf) pad(c byte, n int) {
	if n <= 0 {
		return
	}
	w.n += n
	for room := w.limit - len(w.b); n > 0 && room > 0; n, room = n-1, room-1 {
		w.b = append(w.b, c)
	}
}

// Conversion flags, as in the kernel's printf_spec.
const (
	fLeft = 1 << iota
	fPlus
	fSpace
	fZero
)

type spec struct {
	flags int
	width int // -1: none
}

func isPrint(c byte) bool { return c >= 0x20 && c < 0x7f }
func isSpace(c byte) bool { return c == ' ' || c >= '\t' && c <= '\r' }
func isAlnum(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
}
func isPunct(c byte) bool { return isPrint(c) && c != ' ' && !isAlnum(c) }

// bprintf formats f (a format string without its NUL) with args into w as
// the kernel's bpf_bprintf_prepare and bstr_printf do for bpf_trace_printk,
// bpf_trace_vprintk and bpf_snprintf: the conversions %d %i %u %x %X with
// the l and ll modifiers, %c, %s, %pks, %pus, %p, %px, %pK, %ps, %pS, %pB,
// %pI4, %pi4, %pI6, %pi6 and %%, the flags "0+- " and a width, and no
// precision. Strings and addresses are read with fault-tolerant copies: an
// unreadable string prints empty, an unreadable address as zeros. Strings
// and IP addresses share the kernel's 512-byte argument buffer; a string
// longer than what is left of it is truncated. bprintf returns 0 or a
// negative errno for a format the kernel rejects, before writing anything.
func bprintf(e *vm.Env, w *fmtBuf, f []byte, args []uint64) int64 {
	// The kernel first validates the whole format and copies arguments,
	// then formats; a single pass over a scratch fmtBuf does both, keeping
	// w untouched on error.
	out := *w
	at := func(i int) byte {
		if i < len(f) {
			return f[i]
		}
		return 0
	}
	room := 0 // of the argument buffer
	if len(args) > 0 {
		room = maxBprintfBinArgs
	}
	used := 0
	// take reserves n bytes of the argument buffer, 4-byte aligned for
	// numbers, as the kernel lays them out.
	take := func(n int, align bool) bool {
		if align {
			used = (used + 3) &^ 3
		}
		if room-used < n {
			return false
		}
		used += n
		return true
	}
	nspec := 0
	for i := 0; i < len(f); i++ {
		c := f[i]
		// Control characters are refused; bytes past ASCII are not,
		// as in the running kernel.
		if c < ' ' && !isSpace(c) || c == 0x7f {
			return -einval
		}
		if c != '%' {
			out.writeByte(c)
			continue
		}
		if at(i+1) == '%' {
			out.writeByte('%')
			i++
			continue
		}
		if nspec >= len(args) {
			return -einval
		}
		arg := args[nspec]
		i++
		sp := spec{width: -1}
	flags:
		for ; ; i++ {
			switch at(i) {
			case '-':
				sp.flags |= fLeft
			case '+':
				sp.flags |= fPlus
			case ' ':
				sp.flags |= fSpace
			case '0':
				sp.flags |= fZero
			default:
				break flags
			}
		}
		if c := at(i); c >= '1' && c <= '9' {
			sp.width = 0
			for ; at(i) >= '0' && at(i) <= '9'; i++ {
				sp.width = min(sp.width*10+int(at(i)-'0'), maxFieldWidth)
			}
		}
		if sp.flags&fLeft != 0 {
			sp.flags &^= fZero
		}
		switch at(i) {
		case 'p':
			next := at(i + 1)
			switch {
			case (next == 'k' || next == 'u') && at(i+2) == 's':
				i += 2
				if n := at(i + 1); n != 0 && !isSpace(n) && !isPunct(n) {
					return -einval
				}
				if room == used {
					return -enospc
				}
				s, n, ok := probeString(e, arg, room-used)
				if !ok {
					s, n = nil, 1
				}
				used += n
				// Pre-formatted pointer output ignores the width.
				out.verbatim(s)
			case next == 0 || isSpace(next) || isPunct(next) || next == 'K' || next == 'x' || next == 's' || next == 'S':
				if !take(8, true) {
					return -enospc
				}
				switch next {
				case 's', 'S':
					i++
					formatSymbol(&out, arg)
				case 'K', 'x':
					i++
					formatPointer(&out, arg, sp)
				default:
					formatPointer(&out, arg, sp)
				}
			case next == 'B':
				i++
				var tmp fmtBuf
				tmp.limit = 32
				formatSymbol(&tmp, arg)
				used = min(used+len(tmp.b)+1, room)
				out.verbatim(tmp.b)
			case (next == 'i' || next == 'I') && (at(i+2) == '4' || at(i+2) == '6'):
				i += 2
				size := 4
				if at(i) == '6' {
					size = 16
				}
				if room-used < size {
					return -enospc
				}
				var ip [16]byte
				copy(ip[:], probeRead(e, arg, uint64(size)))
				var tmp fmtBuf
				tmp.limit = 64
				formatIP(&tmp, ip[:size], next == 'I')
				used = min(used+len(tmp.b)+1, room)
				out.verbatim(tmp.b)
			default:
				return -einval
			}
		case 's':
			if n := at(i + 1); n != 0 && !isSpace(n) && !isPunct(n) {
				return -einval
			}
			if room == used {
				return -enospc
			}
			s, n, ok := probeString(e, arg, room-used)
			if !ok {
				s, n = nil, 1
			}
			used += n
			formatString(&out, s, sp)
		case 'c':
			if room == used {
				return -enospc
			}
			used++
			formatString(&out, []byte{byte(arg)}, sp)
		default:
			long := false
			if at(i) == 'l' {
				long = true
				i++
				if at(i) == 'l' {
					i++
				}
			}
			conv := at(i)
			if conv != 'i' && conv != 'd' && conv != 'u' && conv != 'x' && conv != 'X' {
				return -einval
			}
			size := 4
			if long {
				size = 8
			}
			if !take(size, true) {
				return -enospc
			}
			formatInt(&out, arg, long, conv, sp)
		}
		nspec++
	}
	*w = out
	return 0
}

// formatInt formats an integer conversion as the kernel's number().
func formatInt(w *fmtBuf, v uint64, long bool, conv byte, sp spec) {
	var sign byte
	signed := conv == 'd' || conv == 'i'
	if !long {
		if signed {
			v = uint64(int64(int32(v)))
		} else {
			v = uint64(uint32(v))
		}
	}
	if signed {
		switch {
		case int64(v) < 0:
			sign, v = '-', -v
		case sp.flags&fPlus != 0:
			sign = '+'
		case sp.flags&fSpace != 0:
			sign = ' '
		}
	}
	var digits []byte
	var tmp [24]byte
	switch conv {
	case 'x':
		digits = strconv.AppendUint(tmp[:0], v, 16)
	case 'X':
		digits = strconv.AppendUint(tmp[:0], v, 16)
		for i, c := range digits {
			if c >= 'a' {
				digits[i] = c - 'a' + 'A'
			}
		}
	default:
		digits = strconv.AppendUint(tmp[:0], v, 10)
	}
	n := len(digits)
	if sign != 0 {
		n++
	}
	fill := sp.width - n
	if sp.flags&(fLeft|fZero) == 0 {
		w.pad(' ', fill)
	}
	if sign != 0 {
		w.writeByte(sign)
	}
	if sp.flags&fZero != 0 {
		w.pad('0', fill)
	}
	w.write(digits)
	if sp.flags&fLeft != 0 {
		w.pad(' ', fill)
	}
}

// formatString formats %s and %c: space-padded to the width.
func formatString(w *fmtBuf, s []byte, sp spec) {
	fill := sp.width - len(s)
	if sp.flags&fLeft == 0 {
		w.pad(' ', fill)
	}
	w.write(s)
	if sp.flags&fLeft != 0 {
		w.pad(' ', fill)
	}
}

// formatPointer formats %p, %px and %pK as the kernel's %px: 16 hex
// digits by default. (The kernel hashes %p and, depending on
// kptr_restrict, %pK; a userspace VM has no addresses to hide.)
func formatPointer(w *fmtBuf, v uint64, sp spec) {
	if sp.width < 0 {
		sp.width, sp.flags = 16, sp.flags|fZero
	}
	formatInt(w, v, true, 'x', sp)
}

// formatSymbol formats %ps, %pS and %pB as the kernel does for an address
// without a symbol: 0x and 16 hex digits.
func formatSymbol(w *fmtBuf, v uint64) {
	w.writeByte('0')
	w.writeByte('x')
	formatInt(w, v, true, 'x', spec{width: 16, flags: fZero})
}

// formatIP formats %pI4 (1.2.3.4), %pi4 (001.002.003.004), %pI6 (eight
// colon-separated groups of four hex digits) and %pi6 (32 hex digits).
func formatIP(w *fmtBuf, ip []byte, dotted bool) {
	if len(ip) == 4 {
		for i, b := range ip {
			if i > 0 {
				w.writeByte('.')
			}
			sp := spec{width: -1}
			if !dotted {
				sp = spec{width: 3, flags: fZero}
			}
			formatInt(w, uint64(b), false, 'u', sp)
		}
		return
	}
	for i := 0; i < 16; i += 2 {
		if dotted && i > 0 {
			w.writeByte(':')
		}
		formatInt(w, uint64(binary.BigEndian.Uint16(ip[i:])), false, 'x', spec{width: 4, flags: fZero})
	}
}

// cString returns b up to its first NUL, or false if it has none.
func cString(b []byte) ([]byte, bool) {
	i := bytes.IndexByte(b, 0)
	if i < 0 {
		return nil, false
	}
	return b[:i], true
}

// constString returns the NUL-terminated string of a constant-string
// argument at addr, without the NUL. The verifier proved it ends inside
// the value of a frozen read-only array, which nothing can write since; the
// string is still looked for inside that value only (without a NUL there,
// -EINVAL), a cheap bound that does not rest on that proof. Unverified
// programs may pass
// any address: the string must end in memory the run may read, or f is
// nil.
func constString(e *vm.Env, addr uint64) (f []byte, errno int64) {
	span := readableSpan(e, addr)
	if r, ok := e.Value.(*runner.Runner); ok {
		span = r.StringSpan(addr, span)
	}
	if span == 0 {
		return nil, 0
	}
	f, ok := cString(vm.Slice(addr, span))
	if !ok {
		return nil, -einval
	}
	return f, 0
}

// argsFrom reads the u64 argument array of bpf_snprintf and
// bpf_trace_vprintk, whose size must be a multiple of 8 of at most 12
// arguments. ok is false for sizes the kernel rejects with -EINVAL.
func argsFrom(e *vm.Env, addr uint64, size uint32, buf *[maxBprintfArgs]uint64) ([]uint64, bool, error) {
	if size%8 != 0 || size > maxBprintfArgs*8 || size > 0 && addr == 0 {
		return nil, false, nil
	}
	b, err := e.Bytes(addr, uint64(size), false)
	if err != nil {
		return nil, false, err
	}
	n := int(size / 8)
	for i := range n {
		buf[i] = binary.NativeEndian.Uint64(b[i*8:])
	}
	return buf[:n], true, nil
}

// tracePrint formats a bpf_trace_printk message and writes it to the
// program's Output as one line. It returns the length of the message, as
// the kernel does, or a negative errno.
func tracePrint(e *vm.Env, f []byte, args []uint64) uint64 {
	r := runner.Of(e)
	buf := r.Line()
	w := fmtBuf{b: append((*buf)[:0], tracePrefix...), limit: len(tracePrefix) + maxBprintfBuf - 1, size: maxBprintfBuf}
	if errno := bprintf(e, &w, f, args); errno < 0 {
		return uint64(errno)
	}
	line := w.b
	if len(line) == len(tracePrefix) || line[len(line)-1] != '\n' {
		line = append(line, '\n')
	}
	*buf = line
	if out := r.Output(); out != nil {
		traceMu.Lock()
		out.Write(line)
		traceMu.Unlock()
	}
	return uint64(w.n)
}

// helperTracePrintk is bpf_trace_printk(fmt, fmt_size, arg1, arg2, arg3).
func helperTracePrintk(e *vm.Env, r1, r2, r3, r4, r5 uint64) (uint64, error) {
	b, err := e.Bytes(r1, uint64(uint32(r2)), false)
	if err != nil {
		return 0, err
	}
	f, ok := cString(b)
	if !ok {
		return neg(einval), nil
	}
	args := [maxTracePrintkArgs]uint64{r3, r4, r5}
	return tracePrint(e, f, args[:]), nil
}

// helperTraceVprintk is bpf_trace_vprintk(fmt, fmt_size, data, data_len):
// bpf_trace_printk with up to 12 arguments in an array.
func helperTraceVprintk(e *vm.Env, r1, r2, r3, r4, _ uint64) (uint64, error) {
	var buf [maxBprintfArgs]uint64
	args, ok, err := argsFrom(e, r3, uint32(r4), &buf)
	if err != nil {
		return 0, err
	}
	if !ok {
		return neg(einval), nil
	}
	b, err := e.Bytes(r1, uint64(uint32(r2)), false)
	if err != nil {
		return 0, err
	}
	f, ok := cString(b)
	if !ok {
		return neg(einval), nil
	}
	return tracePrint(e, f, args), nil
}

// helperSnprintf is bpf_snprintf(str, str_size, fmt, data, data_len): it
// formats into str (NUL-terminated, truncated to str_size) and returns the
// length of the whole output including the NUL.
func helperSnprintf(e *vm.Env, r1, r2, r3, r4, r5 uint64) (uint64, error) {
	size := uint32(r2)
	var buf [maxBprintfArgs]uint64
	args, ok, err := argsFrom(e, r4, uint32(r5), &buf)
	if err != nil {
		return 0, err
	}
	if !ok {
		return neg(einval), nil
	}
	var str []byte
	if size > 0 {
		if r1 == 0 {
			// A value that may be NULL passes the verifier, as in
			// the kernel.
			return neg(efault), nil
		}
		if str, err = e.Bytes(r1, uint64(size), true); err != nil {
			return 0, err
		}
	}
	f, errno := constString(e, r3)
	if errno < 0 {
		return uint64(errno), nil
	}
	if f == nil {
		return 0, &vm.MemoryError{Addr: r3, Size: 1}
	}
	line := runner.Of(e).Line()
	// Format into a scratch buffer first: arguments may point into str,
	// and the kernel copies them before it writes.
	w := fmtBuf{b: (*line)[:0], limit: max(int(size)-1, 0), size: int(size)}
	if errno := bprintf(e, &w, f, args); errno < 0 {
		return uint64(errno), nil
	}
	*line = w.b
	if size > 0 {
		n := copy(str, w.b)
		str[n] = 0
	}
	return uint64(w.n + 1), nil
}
