package progtype

// SocketFilter is BPF_PROG_TYPE_SOCKET_FILTER with struct __sk_buff; its
// packet starts at the network header (sk_filter_is_valid_access: no
// packet pointers, no tc fields, only cb[] writable).
var SocketFilter = &Type{
	Name:          "socket_filter",
	ContextSize:   192,
	Fields:        skbFields("tc_classid data data_end data_meta ip tstamp wire_len hwtstamp", "cb"),
	ContextNames:  skbNames,
	MinData:       14,
	NetworkHeader: true,
	Setup:         skbSetup,
	Skb:           true,
	Socket:        skbSocket,
	Helpers:       Helpers(socketFilterHelpers, sockBaseHelpers),
}

// socketFilterHelpers is sk_filter_func_proto's own cases; perf_event_output
// is the networking variant (bpf_skb_event_output), the packet appended.
var socketFilterHelpers = names(CapNone, `skb_load_bytes skb_load_bytes_relative
	get_socket_cookie get_netns_cookie get_socket_uid perf_event_output`)
