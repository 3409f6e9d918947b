package verifier

import (
	"github.com/bpfvm/bpfvm/helper"
	"github.com/bpfvm/bpfvm/maps"
)

// Helper prototypes are defined with the helpers, in package helper; these
// names forward to them.
type (
	// ArgType says what a helper expects in an argument register.
	ArgType = helper.ArgType
	// RetType says what a helper returns in R0.
	RetType = helper.RetType
	// Proto is a helper prototype.
	Proto = helper.Proto
)

// Argument and return types (see package helper).
const (
	ArgNone            = helper.ArgNone
	ArgAnything        = helper.ArgAnything
	ArgScalar          = helper.ArgScalar
	ArgConstMapPtr     = helper.ArgConstMapPtr
	ArgMapKey          = helper.ArgMapKey
	ArgMapValue        = helper.ArgMapValue
	ArgUninitMapValue  = helper.ArgUninitMapValue
	ArgMem             = helper.ArgMem
	ArgUninitMem       = helper.ArgUninitMem
	ArgConstSize       = helper.ArgConstSize
	ArgConstSizeOrZero = helper.ArgConstSizeOrZero
	ArgConstAllocSize  = helper.ArgConstAllocSize
	ArgCtx             = helper.ArgCtx
	ArgCallback        = helper.ArgCallback
	ArgRingbufMem      = helper.ArgRingbufMem
	ArgConstStr        = helper.ArgConstStr
	ArgPtrToLong       = helper.ArgPtrToLong
	ArgMemOrNull       = helper.ArgMemOrNull
	ArgWriteMemOrNull  = helper.ArgWriteMemOrNull
	ArgStackOrNull     = helper.ArgStackOrNull

	RetInteger          = helper.RetInteger
	RetVoid             = helper.RetVoid
	RetMapValueOrNull   = helper.RetMapValueOrNull
	RetRingbufMemOrNull = helper.RetRingbufMemOrNull
)

// forEachMaps have the kernel's map_for_each_callback.
var forEachMaps = []maps.Type{maps.Hash, maps.Array, maps.PerCPUHash, maps.PerCPUArray, maps.LRUHash, maps.LRUPerCPUHash}

// mapHelpers lists, for map types that only some helpers take, the
// helpers that do: the map-type half of the kernel's
// check_map_func_compatibility. bpf_perf_event_read(_value), bpf_skb_output
// and bpf_xdp_output also take perf event arrays in the kernel; bpfvm does
// not implement them.
var mapHelpers = map[maps.Type][]string{
	maps.PerfEventArray: {"bpf_perf_event_output"},
}

// BuiltinProto returns the prototype of a kernel helper bpfvm implements,
// or nil.
//
// Deprecated: use helper.Builtin().Proto.
func BuiltinProto(id int32) *Proto { return helper.Builtin().Proto(id) }
