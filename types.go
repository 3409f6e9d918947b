// The names of cilium/ebpf v0.22.0's Linux map, program and attach types and
// of its small types, forwarded so that code using them compiles with its
// import switched to bpfvm.

package bpfvm

import "github.com/cilium/ebpf"

// MapType is a map's type: cilium/ebpf's, so that specs and code using its
// constants (ebpf.Hash, …) keep compiling with the import switched. Types
// bpfvm lacks fail to load with ErrNotSupported.
type MapType = ebpf.MapType

// Map types, cilium/ebpf's (Linux's numbering).
const (
	UnspecifiedMap      = ebpf.UnspecifiedMap
	Hash                = ebpf.Hash
	Array               = ebpf.Array
	ProgramArray        = ebpf.ProgramArray
	PerfEventArray      = ebpf.PerfEventArray
	PerCPUHash          = ebpf.PerCPUHash
	PerCPUArray         = ebpf.PerCPUArray
	StackTrace          = ebpf.StackTrace
	CGroupArray         = ebpf.CGroupArray
	LRUHash             = ebpf.LRUHash
	LRUCPUHash          = ebpf.LRUCPUHash
	LPMTrie             = ebpf.LPMTrie
	ArrayOfMaps         = ebpf.ArrayOfMaps
	HashOfMaps          = ebpf.HashOfMaps
	DevMap              = ebpf.DevMap
	SockMap             = ebpf.SockMap
	CPUMap              = ebpf.CPUMap
	XSKMap              = ebpf.XSKMap
	SockHash            = ebpf.SockHash
	CGroupStorage       = ebpf.CGroupStorage
	ReusePortSockArray  = ebpf.ReusePortSockArray
	PerCPUCGroupStorage = ebpf.PerCPUCGroupStorage
	Queue               = ebpf.Queue
	Stack               = ebpf.Stack
	SkStorage           = ebpf.SkStorage
	DevMapHash          = ebpf.DevMapHash
	StructOpsMap        = ebpf.StructOpsMap
	RingBuf             = ebpf.RingBuf
	InodeStorage        = ebpf.InodeStorage
	TaskStorage         = ebpf.TaskStorage
	BloomFilter         = ebpf.BloomFilter
	UserRingbuf         = ebpf.UserRingbuf
	CgroupStorage       = ebpf.CgroupStorage
	Arena               = ebpf.Arena
)

// ProgramType is a program's type, cilium/ebpf's. Types bpfvm lacks fail
// to load with ErrNotSupported.
type ProgramType = ebpf.ProgramType

// Program types, cilium/ebpf's (Linux's numbering).
const (
	UnspecifiedProgram    = ebpf.UnspecifiedProgram
	SocketFilter          = ebpf.SocketFilter
	Kprobe                = ebpf.Kprobe
	SchedCLS              = ebpf.SchedCLS
	SchedACT              = ebpf.SchedACT
	TracePoint            = ebpf.TracePoint
	XDP                   = ebpf.XDP
	PerfEvent             = ebpf.PerfEvent
	CGroupSKB             = ebpf.CGroupSKB
	CGroupSock            = ebpf.CGroupSock
	LWTIn                 = ebpf.LWTIn
	LWTOut                = ebpf.LWTOut
	LWTXmit               = ebpf.LWTXmit
	SockOps               = ebpf.SockOps
	SkSKB                 = ebpf.SkSKB
	CGroupDevice          = ebpf.CGroupDevice
	SkMsg                 = ebpf.SkMsg
	RawTracepoint         = ebpf.RawTracepoint
	CGroupSockAddr        = ebpf.CGroupSockAddr
	LWTSeg6Local          = ebpf.LWTSeg6Local
	LircMode2             = ebpf.LircMode2
	SkReuseport           = ebpf.SkReuseport
	FlowDissector         = ebpf.FlowDissector
	CGroupSysctl          = ebpf.CGroupSysctl
	RawTracepointWritable = ebpf.RawTracepointWritable
	CGroupSockopt         = ebpf.CGroupSockopt
	Tracing               = ebpf.Tracing
	StructOps             = ebpf.StructOps
	Extension             = ebpf.Extension
	LSM                   = ebpf.LSM
	SkLookup              = ebpf.SkLookup
	Syscall               = ebpf.Syscall
	Netfilter             = ebpf.Netfilter
)

// AttachType is a program's expected attach type (ProgramSpec.AttachType),
// cilium/ebpf's: for the types whose rules depend on it.
type AttachType = ebpf.AttachType

// Attach types, cilium/ebpf's (Linux's numbering).
const (
	AttachNone                       = ebpf.AttachNone
	AttachCGroupInetIngress          = ebpf.AttachCGroupInetIngress
	AttachCGroupInetEgress           = ebpf.AttachCGroupInetEgress
	AttachCGroupInetSockCreate       = ebpf.AttachCGroupInetSockCreate
	AttachCGroupSockOps              = ebpf.AttachCGroupSockOps
	AttachSkSKBStreamParser          = ebpf.AttachSkSKBStreamParser
	AttachSkSKBStreamVerdict         = ebpf.AttachSkSKBStreamVerdict
	AttachCGroupDevice               = ebpf.AttachCGroupDevice
	AttachSkMsgVerdict               = ebpf.AttachSkMsgVerdict
	AttachCGroupInet4Bind            = ebpf.AttachCGroupInet4Bind
	AttachCGroupInet6Bind            = ebpf.AttachCGroupInet6Bind
	AttachCGroupInet4Connect         = ebpf.AttachCGroupInet4Connect
	AttachCGroupInet6Connect         = ebpf.AttachCGroupInet6Connect
	AttachCGroupInet4PostBind        = ebpf.AttachCGroupInet4PostBind
	AttachCGroupInet6PostBind        = ebpf.AttachCGroupInet6PostBind
	AttachCGroupUDP4Sendmsg          = ebpf.AttachCGroupUDP4Sendmsg
	AttachCGroupUDP6Sendmsg          = ebpf.AttachCGroupUDP6Sendmsg
	AttachLircMode2                  = ebpf.AttachLircMode2
	AttachFlowDissector              = ebpf.AttachFlowDissector
	AttachCGroupSysctl               = ebpf.AttachCGroupSysctl
	AttachCGroupUDP4Recvmsg          = ebpf.AttachCGroupUDP4Recvmsg
	AttachCGroupUDP6Recvmsg          = ebpf.AttachCGroupUDP6Recvmsg
	AttachCGroupGetsockopt           = ebpf.AttachCGroupGetsockopt
	AttachCGroupSetsockopt           = ebpf.AttachCGroupSetsockopt
	AttachTraceRawTp                 = ebpf.AttachTraceRawTp
	AttachTraceFEntry                = ebpf.AttachTraceFEntry
	AttachTraceFExit                 = ebpf.AttachTraceFExit
	AttachModifyReturn               = ebpf.AttachModifyReturn
	AttachLSMMac                     = ebpf.AttachLSMMac
	AttachTraceIter                  = ebpf.AttachTraceIter
	AttachCgroupInet4GetPeername     = ebpf.AttachCgroupInet4GetPeername
	AttachCgroupInet6GetPeername     = ebpf.AttachCgroupInet6GetPeername
	AttachCgroupInet4GetSockname     = ebpf.AttachCgroupInet4GetSockname
	AttachCgroupInet6GetSockname     = ebpf.AttachCgroupInet6GetSockname
	AttachXDPDevMap                  = ebpf.AttachXDPDevMap
	AttachCgroupInetSockRelease      = ebpf.AttachCgroupInetSockRelease
	AttachXDPCPUMap                  = ebpf.AttachXDPCPUMap
	AttachSkLookup                   = ebpf.AttachSkLookup
	AttachXDP                        = ebpf.AttachXDP
	AttachSkSKBVerdict               = ebpf.AttachSkSKBVerdict
	AttachSkReuseportSelect          = ebpf.AttachSkReuseportSelect
	AttachSkReuseportSelectOrMigrate = ebpf.AttachSkReuseportSelectOrMigrate
	AttachPerfEvent                  = ebpf.AttachPerfEvent
	AttachTraceKprobeMulti           = ebpf.AttachTraceKprobeMulti
	AttachTraceKprobeSession         = ebpf.AttachTraceKprobeSession
	AttachLSMCgroup                  = ebpf.AttachLSMCgroup
	AttachStructOps                  = ebpf.AttachStructOps
	AttachNetfilter                  = ebpf.AttachNetfilter
	AttachTCXIngress                 = ebpf.AttachTCXIngress
	AttachTCXEgress                  = ebpf.AttachTCXEgress
	AttachTraceUprobeMulti           = ebpf.AttachTraceUprobeMulti
	AttachCgroupUnixConnect          = ebpf.AttachCgroupUnixConnect
	AttachCgroupUnixSendmsg          = ebpf.AttachCgroupUnixSendmsg
	AttachCgroupUnixRecvmsg          = ebpf.AttachCgroupUnixRecvmsg
	AttachCgroupUnixGetpeername      = ebpf.AttachCgroupUnixGetpeername
	AttachCgroupUnixGetsockname      = ebpf.AttachCgroupUnixGetsockname
	AttachNetkitPrimary              = ebpf.AttachNetkitPrimary
	AttachNetkitPeer                 = ebpf.AttachNetkitPeer
)

// MapKV is an initial key and value of a MapSpec's Contents.
type MapKV = ebpf.MapKV

// MapID and ProgramID are the ids of maps and programs (Map.ID,
// Program.ID), in cilium/ebpf's types.
type (
	MapID     = ebpf.MapID
	ProgramID = ebpf.ProgramID
)

// Verifier log levels, cilium/ebpf's (ProgramOptions.LogLevel).
const (
	LogLevelBranch      = ebpf.LogLevelBranch
	LogLevelInstruction = ebpf.LogLevelInstruction
	LogLevelStats       = ebpf.LogLevelStats
)
