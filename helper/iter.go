package helper

import (
	"bytes"

	"github.com/bpfvm/bpfvm/runner"
	"github.com/bpfvm/bpfvm/vm"
)

// iterHelpers are the iterators' output helpers (kernel/trace/bpf_trace.c):
// they print to the seq_file of the iterator's reader, which is the run's
// Trace.Seq; the seq_file pointer the verifier checked is not read.
var iterHelpers = []Helper{
	{Proto: Proto{Name: "bpf_seq_printf", Args: [5]ArgType{ArgBTFID, ArgMem, ArgConstSize, ArgMemOrNull, ArgConstSizeOrZero}, ArgBTF: [5]string{"seq_file"}}, Func: helperSeqPrintf},
	{Proto: Proto{Name: "bpf_seq_write", Args: [5]ArgType{ArgBTFID, ArgMem, ArgConstSizeOrZero}, ArgBTF: [5]string{"seq_file"}}, Func: helperSeqWrite},
}

// maxSeqLine bounds what one bpf_seq_printf call formats, as the kernel's
// seq_file buffer grows to hold a run's output in pages.
const maxSeqLine = 1 << 16

// helperSeqPrintf is bpf_seq_printf(m, fmt, fmt_size, data, data_len):
// fmt, NUL-terminated within fmt_size bytes, formatted with the u64
// arguments at data as bpf_snprintf formats; 0, or -EINVAL for a format or
// arguments the kernel refuses.
func helperSeqPrintf(e *vm.Env, _, r2, r3, r4, r5 uint64) (uint64, error) {
	f, err := e.Bytes(r2, r3, false)
	if err != nil {
		return 0, err
	}
	var buf [maxBprintfArgs]uint64
	args, ok, err := argsFrom(e, r4, uint32(r5), &buf)
	if err != nil {
		return 0, err
	}
	if !ok || len(f) == 0 || f[len(f)-1] != 0 {
		return neg(einval), nil
	}
	f = f[:bytes.IndexByte(f, 0)]
	line := runner.Of(e).Line()
	w := fmtBuf{b: (*line)[:0], limit: maxSeqLine, size: maxSeqLine + 1}
	if errno := bprintf(e, &w, f, args); errno < 0 {
		return uint64(errno), nil
	}
	*line = w.b
	if seq := runner.Of(e).Trace().Seq; seq != nil {
		seq.Write(w.b)
	}
	return 0, nil
}

// helperSeqWrite is bpf_seq_write(m, data, len): the bytes as they are.
func helperSeqWrite(e *vm.Env, _, r2, r3, _, _ uint64) (uint64, error) {
	b, err := e.Bytes(r2, r3, false)
	if err != nil {
		return 0, err
	}
	if seq := runner.Of(e).Trace().Seq; seq != nil {
		seq.Write(b)
	}
	return 0, nil
}
