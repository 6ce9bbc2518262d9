/* The libcyaml schema of the configuration file (config_priv.h): every key, loaded into the
 * raw structs as strings and numbers; config.c converts and checks them. */
#include "config/config_priv.h"

#define TL_OPT (CYAML_FLAG_OPTIONAL | CYAML_FLAG_POINTER)
#define TL_STR(key, st, m)     CYAML_FIELD_STRING_PTR(key, CYAML_FLAG_POINTER, st, m, 0, CYAML_UNLIMITED)
#define TL_OSTR(key, st, m)    CYAML_FIELD_STRING_PTR(key, TL_OPT, st, m, 0, CYAML_UNLIMITED)
#define TL_OINT(key, st, m)    CYAML_FIELD_INT_PTR(key, TL_OPT, st, m)
#define TL_OUINT(key, st, m)   CYAML_FIELD_UINT_PTR(key, TL_OPT, st, m)
#define TL_OFLOAT(key, st, m)  CYAML_FIELD_FLOAT_PTR(key, TL_OPT, st, m)

static const cyaml_schema_value_t tl_schema_string = {
	CYAML_VALUE_STRING(CYAML_FLAG_POINTER, char, 0, CYAML_UNLIMITED),
};

static const cyaml_schema_field_t tl_schema_aqm_fields[] = {
	TL_OINT("target_us", struct tl_raw_aqm, target_us),
	TL_OINT("interval_us", struct tl_raw_aqm, interval_us),
	TL_OINT("quantum", struct tl_raw_aqm, quantum),
	TL_OINT("flows", struct tl_raw_aqm, flows),
	TL_OINT("limit", struct tl_raw_aqm, limit),
	TL_OINT("memory_limit", struct tl_raw_aqm, memory_limit),
	CYAML_FIELD_BOOL_PTR("ecn", TL_OPT, struct tl_raw_aqm, ecn),
	TL_OINT("rtt_us", struct tl_raw_aqm, rtt_us),
	TL_OINT("l4s_us", struct tl_raw_aqm, l4s_us),
	TL_OINT("flow_rtt_pct", struct tl_raw_aqm, flow_rtt_pct),
	TL_OINT("quantum_fast", struct tl_raw_aqm, quantum_fast),
	CYAML_FIELD_END
};

static const cyaml_schema_field_t tl_schema_shaper_fields[] = {
	TL_OINT("rate_bps", struct tl_raw_shaper, rate_bps),
	TL_OINT("burst_bytes", struct tl_raw_shaper, burst_bytes),
	CYAML_FIELD_END
};

static const cyaml_schema_field_t tl_schema_metrics_fields[] = {
	TL_OSTR("listen", struct tl_raw_metrics, listen),
	TL_OINT("peer_series_max", struct tl_raw_metrics, peer_series_max),
	CYAML_FIELD_END
};

static const cyaml_schema_field_t tl_schema_port_fields[] = {
	TL_OSTR("iface", struct tl_raw_port, iface),
	TL_OSTR("driver", struct tl_raw_port, driver),
	TL_OSTR("devargs", struct tl_raw_port, devargs),
	TL_OINT("queues", struct tl_raw_port, queues),
	CYAML_FIELD_BOOL_PTR("zero_copy", TL_OPT, struct tl_raw_port, zero_copy),
	CYAML_FIELD_MAPPING_PTR("aqm", TL_OPT, struct tl_raw_port, aqm, tl_schema_aqm_fields),
	CYAML_FIELD_MAPPING_PTR("shaper", TL_OPT, struct tl_raw_port, shaper, tl_schema_shaper_fields),
	CYAML_FIELD_END
};

static const cyaml_schema_field_t tl_schema_ports_fields[] = {
	CYAML_FIELD_MAPPING_PTR("wan", CYAML_FLAG_POINTER, struct tl_raw_ports, wan,
				tl_schema_port_fields),
	CYAML_FIELD_MAPPING_PTR("lan", TL_OPT, struct tl_raw_ports, lan, tl_schema_port_fields),
	CYAML_FIELD_END
};

static const cyaml_schema_field_t tl_schema_peer_fields[] = {
	TL_STR("public_key", struct tl_raw_peer, public_key),
	TL_OSTR("preshared_key", struct tl_raw_peer, preshared_key),
	TL_OSTR("preshared_key_file", struct tl_raw_peer, preshared_key_file),
	TL_OSTR("endpoint", struct tl_raw_peer, endpoint),
	CYAML_FIELD_SEQUENCE("allowed_ips", TL_OPT, struct tl_raw_peer, allowed_ips,
			     &tl_schema_string, 0, CYAML_UNLIMITED),
	TL_OINT("persistent_keepalive", struct tl_raw_peer, persistent_keepalive),
	TL_OSTR("name", struct tl_raw_peer, name),
	CYAML_FIELD_END
};

static const cyaml_schema_value_t tl_schema_peer = {
	CYAML_VALUE_MAPPING(CYAML_FLAG_DEFAULT, struct tl_raw_peer, tl_schema_peer_fields),
};

static const cyaml_schema_field_t tl_schema_neighbour_fields[] = {
	TL_STR("ip", struct tl_raw_neighbour, ip),
	TL_STR("mac", struct tl_raw_neighbour, mac),
	TL_STR("port", struct tl_raw_neighbour, port),
	CYAML_FIELD_END
};

static const cyaml_schema_value_t tl_schema_neighbour = {
	CYAML_VALUE_MAPPING(CYAML_FLAG_DEFAULT, struct tl_raw_neighbour,
			    tl_schema_neighbour_fields),
};

static const cyaml_schema_field_t tl_schema_timers_fields[] = {
	TL_OFLOAT("rekey_after_time", struct tl_raw_timers, rekey_after_time),
	TL_OFLOAT("reject_after_time", struct tl_raw_timers, reject_after_time),
	TL_OFLOAT("rekey_attempt_time", struct tl_raw_timers, rekey_attempt_time),
	TL_OFLOAT("rekey_timeout", struct tl_raw_timers, rekey_timeout),
	TL_OFLOAT("keepalive_timeout", struct tl_raw_timers, keepalive_timeout),
	TL_OUINT("rekey_after_messages", struct tl_raw_timers, rekey_after_messages),
	TL_OUINT("reject_after_messages", struct tl_raw_timers, reject_after_messages),
	CYAML_FIELD_END
};

static const cyaml_schema_field_t tl_schema_config_fields[] = {
	TL_STR("name", struct tl_raw_config, name),
	TL_STR("mode", struct tl_raw_config, mode),
	TL_OSTR("private_key", struct tl_raw_config, private_key),
	TL_OSTR("private_key_file", struct tl_raw_config, private_key_file),
	TL_OINT("listen_port", struct tl_raw_config, listen_port),
	TL_OINT("mtu", struct tl_raw_config, mtu),
	CYAML_FIELD_SEQUENCE("addresses", TL_OPT, struct tl_raw_config, addresses,
			     &tl_schema_string, 0, CYAML_UNLIMITED),
	TL_OSTR("workers", struct tl_raw_config, workers),
	TL_OSTR("handshake_threads", struct tl_raw_config, handshake_threads),
	TL_OINT("staged_packets", struct tl_raw_config, staged_packets),
	CYAML_FIELD_MAPPING_PTR("ports", CYAML_FLAG_POINTER, struct tl_raw_config, ports,
				tl_schema_ports_fields),
	CYAML_FIELD_SEQUENCE("peers", TL_OPT, struct tl_raw_config, peers, &tl_schema_peer,
			     0, CYAML_UNLIMITED),
	CYAML_FIELD_SEQUENCE("neighbours", TL_OPT, struct tl_raw_config, neighbours,
			     &tl_schema_neighbour, 0, CYAML_UNLIMITED),
	CYAML_FIELD_MAPPING_PTR("timers", TL_OPT, struct tl_raw_config, timers,
				tl_schema_timers_fields),
	CYAML_FIELD_SEQUENCE("eal", TL_OPT, struct tl_raw_config, eal, &tl_schema_string,
			     0, CYAML_UNLIMITED),
	CYAML_FIELD_MAPPING_PTR("metrics", TL_OPT, struct tl_raw_config, metrics,
				tl_schema_metrics_fields),
	CYAML_FIELD_END
};

const cyaml_schema_value_t tl_cfg_schema = {
	CYAML_VALUE_MAPPING(CYAML_FLAG_POINTER, struct tl_raw_config, tl_schema_config_fields),
};
