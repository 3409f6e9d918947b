package verifier

// bpf_snprintf's format is checked when the program is verified, as the
// kernel's check_bpf_snprintf_call does: the format is a constant string
// (checkConstStr) and its conversions must be ones the helper formats, no
// more of them than the data argument holds.

// checkSnprintf checks a bpf_snprintf call's format (R3) against its data
// length (R5) once the arguments are checked.
func (v *verifier) checkSnprintf(pc int, f *Frame) error {
	data, fmtReg := &f.Regs[5], &f.Regs[3]
	if data.Type != ScalarValue || fmtReg.Type != PtrToMapValue || !fmtReg.Map.Fixed() || fmtReg.Map.ReadOnlyValue == nil {
		return nil // a host's prototype of its own
	}
	if data.Var.Value%8 != 0 {
		// The kernel refuses it without a message.
		return v.errorf(pc, "bpf_snprintf data_len %#x is not a multiple of 8", data.Var.Value)
	}
	off := int64(fmtReg.Off) + int64(fmtReg.Const())
	if off < 0 || off >= int64(len(fmtReg.Map.ReadOnlyValue)) {
		return nil // refused by checkConstStr
	}
	if !validFormat(fmtReg.Map.ReadOnlyValue[off:], data.Var.Value/8) {
		return v.errorf(pc, "Invalid format string")
	}
	return nil
}

// validFormat reports whether f, up to its NUL, is a format that the
// kernel's bpf_bprintf_prepare accepts with nargs arguments: no control
// characters, and the conversions %d %i %u %x %X (with l or ll), %c, %s, %p,
// %pK, %px, %ps, %pS, %pB, %pks, %pus, %pi4, %pI4, %pi6 and %pI6, after
// the flags "0+- " and a width, at most nargs of them; %% is a '%'.
func validFormat(f []byte, nargs uint64) bool {
	at := func(i int) byte {
		if i < len(f) {
			return f[i]
		}
		return 0
	}
	space := func(c byte) bool { return c == ' ' || c >= '\t' && c <= '\r' }
	alnum := func(c byte) bool { return c >= '0' && c <= '9' || c|0x20 >= 'a' && c|0x20 <= 'z' }
	punct := func(c byte) bool { return c > ' ' && c < 0x7f && !alnum(c) }
	// A string conversion ends the word.
	strEnd := func(c byte) bool { return c == 0 || space(c) || punct(c) }
	var n uint64
	for i := 0; i < len(f) && f[i] != 0; i++ {
		// Control characters are refused; bytes past ASCII are not, as
		// the running kernel shows (tested).
		if c := f[i]; c < ' ' && !space(c) || c == 0x7f {
			return false
		}
		if f[i] != '%' {
			continue
		}
		if at(i+1) == '%' {
			i++
			continue
		}
		if n >= nargs {
			return false
		}
		i++
		for at(i) == '0' || at(i) == '+' || at(i) == '-' || at(i) == ' ' {
			i++
		}
		if at(i) >= '1' && at(i) <= '9' {
			for i++; at(i) >= '0' && at(i) <= '9'; i++ {
			}
		}
		switch at(i) {
		case 'p':
			switch next := at(i + 1); {
			case (next == 'k' || next == 'u') && at(i+2) == 's':
				if i += 2; !strEnd(at(i + 1)) {
					return false
				}
			case strEnd(next) || next == 'K' || next == 'x' || next == 's' || next == 'S':
				// What follows is read as plain text, as in the
				// kernel.
			case next == 'B':
				i++
			case (next == 'i' || next == 'I') && (at(i+2) == '4' || at(i+2) == '6'):
				i += 2
			default:
				return false
			}
		case 's':
			if !strEnd(at(i + 1)) {
				return false
			}
		case 'c':
		default:
			if at(i) == 'l' {
				if i++; at(i) == 'l' {
					i++
				}
			}
			switch at(i) {
			case 'i', 'd', 'u', 'x', 'X':
			default:
				return false
			}
		}
		n++
	}
	return true
}
