package verifier

import "github.com/bpfvm/bpfvm/helper"

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
	ArgPtrToInt        = helper.ArgPtrToInt
	ArgMemOrNull       = helper.ArgMemOrNull
	ArgWriteMemOrNull  = helper.ArgWriteMemOrNull
	ArgStackOrNull     = helper.ArgStackOrNull
	ArgWriteMem        = helper.ArgWriteMem
	ArgSockCommon      = helper.ArgSockCommon
	ArgSockRelease     = helper.ArgSockRelease
	ArgSockBTF         = helper.ArgSockBTF
	ArgSockBTFOrNull   = helper.ArgSockBTFOrNull
	ArgCtxOrNull       = helper.ArgCtxOrNull
	ArgSpinLock        = helper.ArgSpinLock
	ArgMapValueOrNull  = helper.ArgMapValueOrNull
	ArgSocketOrNull    = helper.ArgSocketOrNull
	ArgFixedMem        = helper.ArgFixedMem
	ArgBTFID           = helper.ArgBTFID
	ArgKptrDest        = helper.ArgKptrDest
	ArgKptrNew         = helper.ArgKptrNew

	ArgConstAllocSizeOrZero = helper.ArgConstAllocSizeOrZero
	ArgDynptr               = helper.ArgDynptr
	ArgDynptrLocalUninit    = helper.ArgDynptrLocalUninit
	ArgDynptrRingbufUninit  = helper.ArgDynptrRingbufUninit
	ArgDynptrRingbufRelease = helper.ArgDynptrRingbufRelease

	RetInteger          = helper.RetInteger
	RetVoid             = helper.RetVoid
	RetMapValueOrNull   = helper.RetMapValueOrNull
	RetRingbufMemOrNull = helper.RetRingbufMemOrNull
	RetMapValue         = helper.RetMapValue
	RetSocketOrNull     = helper.RetSocketOrNull
	RetSockCommonOrNull = helper.RetSockCommonOrNull
	RetTCPSockOrNull    = helper.RetTCPSockOrNull
	RetKptrOrNull       = helper.RetKptrOrNull
	RetDynptrMemOrNull  = helper.RetDynptrMemOrNull
	RetBTFIDTrusted     = helper.RetBTFIDTrusted
	RetBTFIDOrNull      = helper.RetBTFIDOrNull
	RetBTFID            = helper.RetBTFID
)

// BuiltinProto returns the prototype of a kernel helper bpfvm implements,
// or nil.
//
// Deprecated: use helper.Builtin().Proto.
func BuiltinProto(id int32) *Proto { return helper.Builtin().Proto(id) }
