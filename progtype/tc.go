package progtype

// tcFields is struct __sk_buff of tc programs (tc_cls_act_is_valid_access).
var tcFields = func() []Field {
	f := skbFields("ip", "mark tc_index priority tc_classid cb tstamp queue_mapping")
	for i := range f {
		if f[i].Name == "tstamp_type" {
			f[i].Read = true // only tc programs read it
		}
	}
	return f
}()

// SchedCLS is BPF_PROG_TYPE_SCHED_CLS (tc classifiers) with struct __sk_buff.
var SchedCLS = &Type{
	Name:         "sched_cls",
	ContextSize:  192,
	Fields:       tcFields,
	ContextNames: skbNames,
	MinData:      14,
	Setup:        skbSetup,
	Skb:          true,
	Socket:       skbSocket,
	Helpers:      tcHelpers,
}

// SchedACT is BPF_PROG_TYPE_SCHED_ACT (tc actions) with struct __sk_buff.
var SchedACT = &Type{
	Name:         "sched_act",
	ContextSize:  192,
	Fields:       tcFields,
	ContextNames: skbNames,
	MinData:      14,
	Setup:        skbSetup,
	Skb:          true,
	Socket:       skbSocket,
	Helpers:      tcHelpers,
}

// tcHelpers is tc_cls_act_func_proto, for both tc types: its own cases
// (those under CONFIG_XFRM, CONFIG_CGROUP_NET_CLASSID,
// CONFIG_SOCK_CGROUP_DATA, CONFIG_INET and CONFIG_SYN_COOKIES included, as
// kernels with tc and BPF build them), then bpf_sk_base_func_proto.
var tcHelpers = Helpers(names(CapNone, `skb_store_bytes skb_load_bytes
	skb_load_bytes_relative skb_pull_data csum_diff csum_update csum_level
	l3_csum_replace l4_csum_replace clone_redirect get_cgroup_classid
	skb_vlan_push skb_vlan_pop skb_change_proto skb_change_type
	skb_adjust_room skb_change_tail skb_change_head
	skb_get_tunnel_key skb_set_tunnel_key skb_get_tunnel_opt skb_set_tunnel_opt
	redirect redirect_neigh redirect_peer get_route_realm
	get_hash_recalc set_hash_invalid set_hash perf_event_output
	get_smp_processor_id skb_under_cgroup get_socket_cookie get_netns_cookie
	get_socket_uid fib_lookup check_mtu sk_fullsock sk_storage_get
	sk_storage_delete skb_get_xfrm_state skb_cgroup_classid skb_cgroup_id
	skb_ancestor_cgroup_id sk_lookup_tcp sk_lookup_udp sk_release tcp_sock
	get_listener_sock skc_lookup_tcp tcp_check_syncookie skb_ecn_set_ce
	tcp_gen_syncookie sk_assign skb_set_tstamp
	tcp_raw_gen_syncookie_ipv4 tcp_raw_gen_syncookie_ipv6
	tcp_raw_check_syncookie_ipv4 tcp_raw_check_syncookie_ipv6`), sockBaseHelpers)
