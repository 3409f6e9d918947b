package helper

import "testing"

func TestCsumArithmetic(t *testing.T) {
	// RFC 1624, section 4: HC 0xdd2f, a field changing from 0x5555 to
	// 0x3285 gives HC' 0x0000 (eqn. 3, which csum_replace2 computes).
	if got := csumReplace2(0xdd2f, 0x5555, 0x3285); got != 0x0000 {
		t.Errorf("csumReplace2 = %#04x, want 0x0000", got)
	}
	if got := csumFold(0x0001_fffe); got != 0 {
		t.Errorf("csumFold(0x1fffe) = %#x, want 0", got)
	}
	if got := csumFrom32to16(0x1234_5678); got != 0x68ac {
		t.Errorf("csumFrom32to16 = %#x, want 0x68ac", got)
	}
	if got := csumPartial([]byte{1, 2, 3}, 0); got != 0x030201 {
		t.Errorf("csumPartial = %#x, want 0x030201", got)
	}
}
