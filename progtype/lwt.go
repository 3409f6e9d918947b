package progtype

// lwtFields is struct __sk_buff of the lightweight tunnel programs
// (lwt_is_valid_access): no tc, socket or time fields; mark, priority and
// cb[] writable.
var lwtFields = skbFields("tc_classid ip data_meta tstamp wire_len hwtstamp", "mark priority cb")

// lwt returns a lightweight tunnel type: the test run is the skb one, the
// packet seen from its network header (a route's packets have no link
// header yet).
func lwt(name string, helpers HelperSet, readOnly bool) *Type {
	return &Type{
		Name:           name,
		ContextSize:    192,
		Fields:         lwtFields,
		ContextNames:   skbNames,
		MinData:        ethHeader,
		NetworkHeader:  true,
		Setup:          skbSetup,
		Socket:         skbSocket,
		Helpers:        helpers,
		PacketReadOnly: readOnly,
	}
}

// LWTIn, LWTOut, LWTXmit and LWTSeg6Local are BPF_PROG_TYPE_LWT_IN,
// LWT_OUT, LWT_XMIT and LWT_SEG6LOCAL with struct __sk_buff; lwt_in,
// lwt_out and lwt_seg6local programs only read the packet. The kernel has
// no test run for lwt_seg6local; bpfvm's runs are the others' (the skb
// test run's).
var (
	LWTIn        = lwt("lwt_in", Helpers(names(CapNone, "lwt_push_encap"), lwtOutHelpers, sockBaseHelpers), true)
	LWTOut       = lwt("lwt_out", Helpers(lwtOutHelpers, sockBaseHelpers), true)
	LWTXmit      = lwt("lwt_xmit", Helpers(lwtXmitHelpers, lwtOutHelpers, sockBaseHelpers), false)
	LWTSeg6Local = lwt("lwt_seg6local", Helpers(names(CapNone, "lwt_seg6_store_bytes lwt_seg6_action lwt_seg6_adjust_srh"), lwtOutHelpers, sockBaseHelpers), true)
)

// lwtOutHelpers is lwt_out_func_proto's own cases, which lwt_in and
// lwt_xmit fall back to, before bpf_sk_base_func_proto.
var lwtOutHelpers = names(CapNone, `skb_load_bytes skb_pull_data csum_diff
	get_cgroup_classid get_route_realm get_hash_recalc perf_event_output
	get_smp_processor_id skb_under_cgroup`)

// lwtXmitHelpers is lwt_xmit_func_proto's own cases.
var lwtXmitHelpers = names(CapNone, `skb_get_tunnel_key skb_set_tunnel_key
	skb_get_tunnel_opt skb_set_tunnel_opt redirect clone_redirect
	skb_change_tail skb_change_head skb_store_bytes csum_update csum_level
	l3_csum_replace l4_csum_replace set_hash_invalid lwt_push_encap`)
