/* The read model's fields, declared once, as src/dataplane/drop.h declares the drop reasons:
 * every observer (the control API's show, the DPDK telemetry commands, the Prometheus text,
 * tunlessctl) names a value by these tables, and the control API spec and the docs list
 * them from here. Plain preprocessor data: no DPDK, no device (src/ctrl/stats.h fills them).
 *
 * X(id, kind, unit, prometheus family, extra prometheus label, help)
 *   id      key in show's reply and in the telemetry dictionaries
 *   kind    COUNTER (never goes down) or GAUGE
 *   unit    what the value counts; US and NS values are exported to Prometheus in seconds
 *   family  the Prometheus family; fields that share one sit next to each other and tell
 *           their samples apart by the extra label ("" when none)
 * Every value is an unsigned 64-bit integer. The labels of each section's samples are its
 * strings (TL_STATS_*_STRINGS): device none, ports port, queues port and worker, workers
 * worker, peers device and public_key. */
#ifndef TL_API_STATS_FIELDS_H
#define TL_API_STATS_FIELDS_H

enum tl_stat_kind { TL_STAT_COUNTER, TL_STAT_GAUGE };
enum tl_stat_unit { TL_UNIT_NONE, TL_UNIT_PACKETS, TL_UNIT_BYTES, TL_UNIT_JOBS, TL_UNIT_SECONDS, TL_UNIT_US,
		    TL_UNIT_NS, TL_UNIT_BPS, TL_UNIT_PERCENT, TL_UNIT_BOOL };

#define TL_STATS_DEVICE(X) \
	X(listen_port, GAUGE, NONE, "tunless_listen_port", "", "UDP listen port on the WAN") \
	X(mtu, GAUGE, BYTES, "tunless_mtu_bytes", "", "tunnel (inner) MTU") \
	X(workers, GAUGE, NONE, "tunless_workers", "", "dataplane worker lcores") \
	X(queue_pairs, GAUGE, NONE, "tunless_queue_pairs", "", "RX/TX queue pairs per port; worker i below this number owns pair i of both ports") \
	X(crypto_ring, GAUGE, JOBS, "tunless_crypto_ring_jobs", "", "crypto jobs waiting in the shared ring for a worker now") \
	X(crypto_ring_capacity, GAUGE, JOBS, "tunless_crypto_ring_capacity_jobs", "", "capacity of the shared crypto ring (every job there is)") \
	X(peers, GAUGE, NONE, "tunless_peers", "", "configured peers") \
	X(uptime_s, GAUGE, SECONDS, "tunless_uptime_seconds", "", "seconds since the daemon came up") \
	X(to_ctrl, COUNTER, PACKETS, "tunless_handshake_messages_to_ctrl_total", "", "handshake messages the workers handed to the control plane") \
	X(consumed, COUNTER, PACKETS, "tunless_consumed_packets_total", "", "keepalives and handshake messages taken by tunless itself") \
	X(staged, COUNTER, PACKETS, "tunless_staged_packets_total", "", "inner packets parked while their peer had no session") \
	X(unstaged, COUNTER, PACKETS, "tunless_unstaged_packets_total", "", "staged packets sent after the handshake") \
	X(from_ctrl, COUNTER, PACKETS, "tunless_ctrl_frames_sent_total", "", "frames the control plane built (handshakes, keepalives, staged packets) and a worker sent") \
	X(slowpath_rx, COUNTER, PACKETS, "tunless_slowpath_rx_packets_total", "", "WAN datagrams that came through the kernel's UDP socket (reassembled fragments)") \
	X(icmp_errors, COUNTER, PACKETS, "tunless_icmp_errors_sent_total", "", "ICMP errors tunless generated (fragmentation needed / packet too big)") \
	X(csum_completed, COUNTER, PACKETS, "tunless_checksums_completed_total", "", "LAN packets whose TCP/UDP checksum the sender's kernel left partial and tunless completed") \
	X(fragmented, COUNTER, PACKETS, "tunless_fragmented_packets_total", "", "LAN IPv4 packets without DF above the tunnel MTU that tunless fragmented") \
	X(fragments, COUNTER, PACKETS, "tunless_fragments_total", "", "IPv4 fragments made of them") \
	X(handshakes_sent, COUNTER, NONE, "tunless_handshakes_sent_total", "", "handshake initiations sent (responses are not counted here)") \
	X(handshakes_received, COUNTER, NONE, "tunless_handshakes_received_total", "", "handshake initiations and responses received and accepted") \
	X(cookies_sent, COUNTER, NONE, "tunless_cookies_sent_total", "", "cookie replies sent (under load)") \
	X(handshakes_completed, COUNTER, NONE, "tunless_handshakes_completed_total", "", "completed handshakes of the current peers (sessions established)")
#define TL_STATS_DEVICE_STRINGS "name, mode, public_key, version"

#define TL_STATS_PORT(X) \
	X(rx_packets, COUNTER, PACKETS, "tunless_port_rx_packets_total", "", "frames the workers took from the port (WAN: with the slow path's datagrams); conservation: rx = tx + drops + in flight") \
	X(tx_packets, COUNTER, PACKETS, "tunless_port_tx_packets_total", "", "frames the port took for sending") \
	X(backpressure, COUNTER, NONE, "tunless_port_backpressure_total", "", "worker rounds in which the port's egress queues held packets back (port or shaper not ready)") \
	X(rx_drops, COUNTER, PACKETS, "tunless_port_rx_drops_total", "", "packets received on the port and dropped before reaching a queue (any reason)") \
	X(dequeue_drops, COUNTER, PACKETS, "tunless_port_dequeue_drops_total", "", "packets dropped when the port's queue released them (e.g. a session gone meanwhile)") \
	X(ethdev_rx_packets, COUNTER, PACKETS, "tunless_ethdev_rx_packets_total", "", "frames the port received (rte_eth_stats ipackets)") \
	X(ethdev_tx_packets, COUNTER, PACKETS, "tunless_ethdev_tx_packets_total", "", "frames the port sent (opackets)") \
	X(ethdev_rx_bytes, COUNTER, BYTES, "tunless_ethdev_rx_bytes_total", "", "bytes the port received (ibytes)") \
	X(ethdev_tx_bytes, COUNTER, BYTES, "tunless_ethdev_tx_bytes_total", "", "bytes the port sent (obytes)") \
	X(ethdev_rx_missed, COUNTER, PACKETS, "tunless_ethdev_rx_missed_total", "", "frames lost before the dataplane saw them (imissed: on an AF_XDP port the kernel found no free buffer because the socket RX ring was not read, drop reason xsk_ring_full; on a NIC PMD port the NIC RX ring was full, nic_rx_missed; on a udp or packet port the kernel socket's receive buffer was full, kernel_socket_overflow, counted per message the sender made)") \
	X(ethdev_rx_errors, COUNTER, PACKETS, "tunless_ethdev_rx_errors_total", "", "erroneous received frames (ierrors)") \
	X(ethdev_tx_errors, COUNTER, PACKETS, "tunless_ethdev_tx_errors_total", "", "failed transmissions (oerrors)") \
	X(gso_rx, COUNTER, NONE, "tunless_port_gso_rx_total", "", "kernel messages read that held several packets and were cut into frames (udp port: UDP_GRO messages; packet port: TSO packets split into segments); 0 on other ports") \
	X(gso_tx, COUNTER, NONE, "tunless_port_gso_tx_total", "", "GSO messages sent that held several frames (udp port: UDP_SEGMENT sends; packet port: a TCP flow's segments merged); 0 on other ports") \
	X(tc_steered, COUNTER, PACKETS, "tunless_port_tc_steered_total", "", "a gateway's packet LAN port: packets (GRO super-packets count one) its tc program on the LAN interface sent to tunless; 0 on other ports") \
	X(tc_passed, COUNTER, PACKETS, "tunless_port_tc_passed_total", "", "a gateway's packet LAN port: packets its tc program left to the kernel (ARP, neighbour discovery, not routed into the tunnel, the gateway's own); 0 on other ports") \
	X(tc_sent, COUNTER, PACKETS, "tunless_port_tc_sent_total", "", "a gateway's packet LAN port: tunless's frames its tc program sent out of the LAN interface; 0 on other ports") \
	X(tc_no_target, COUNTER, PACKETS, "tunless_port_tc_no_target_total", "", "a gateway's packet LAN port: redirects its tc programs could not make (no interface to send to: a packet from the LAN went to the kernel, one from tunless was dropped); 0 on other ports")
#define TL_STATS_PORT_STRINGS "port, iface"

#define TL_STATS_QUEUE(X) \
	X(depth_packets, GAUGE, PACKETS, "tunless_queue_depth_packets", "", "packets queued now") \
	X(depth_bytes, GAUGE, BYTES, "tunless_queue_depth_bytes", "", "packet bytes queued now") \
	X(memory_bytes, GAUGE, BYTES, "tunless_queue_memory_bytes", "", "mbuf buffer bytes queued (counted against memory_limit)") \
	X(enqueued, COUNTER, PACKETS, "tunless_queue_enqueued_packets_total", "", "packets offered to the queue; enqueued = dequeued + AQM drops + depth") \
	X(dequeued, COUNTER, PACKETS, "tunless_queue_dequeued_packets_total", "", "packets handed to the port") \
	X(requeued, COUNTER, PACKETS, "tunless_queue_requeued_packets_total", "", "packets given back because the port took fewer than offered") \
	X(drops_aqm_codel, COUNTER, PACKETS, "tunless_queue_aqm_drops_total", "reason=\"aqm_codel\"", "CoDel dropped a non-ECT packet") \
	X(drops_aqm_overlimit, COUNTER, PACKETS, "tunless_queue_aqm_drops_total", "reason=\"aqm_overlimit\"", "hard limit: dropped from the fattest flow") \
	X(ecn_marks, COUNTER, PACKETS, "tunless_queue_ecn_marks_total", "", "ECT packets marked CE instead of dropped (the L4S step's included)") \
	X(l4s_marks, COUNTER, PACKETS, "tunless_queue_l4s_marks_total", "", "ECT(1) packets marked CE at the L4S step (aqm_l4s_us)") \
	X(rtt_held, COUNTER, PACKETS, "tunless_queue_flow_rtt_held_total", "", "packets above the target that their TCP flow's longer target (aqm_flow_rtt_pct of its round trip) let pass") \
	X(new_flows, COUNTER, NONE, "tunless_queue_new_flows_total", "", "flows that became active") \
	X(overlimit_events, COUNTER, NONE, "tunless_queue_overlimit_events_total", "", "batches dropped at the hard limit") \
	X(flows_new, GAUGE, NONE, "tunless_queue_flows", "list=\"new\"", "active flows on the DRR new list") \
	X(flows_old, GAUGE, NONE, "tunless_queue_flows", "list=\"old\"", "active flows on the DRR old list") \
	X(tx_packets, COUNTER, PACKETS, "tunless_queue_tx_packets_total", "", "frames the port took from this queue") \
	X(tx_bytes, COUNTER, BYTES, "tunless_queue_tx_bytes_total", "", "bytes the port took from this queue") \
	X(backpressure, COUNTER, NONE, "tunless_queue_backpressure_total", "", "rounds the port took fewer frames than offered") \
	X(shaper_waits, COUNTER, NONE, "tunless_queue_shaper_waits_total", "", "rounds the shaper held packets back") \
	X(shaper_lost_ns, COUNTER, NS, "tunless_queue_shaper_lost_seconds_total", "", "sending time the shaper gave up while backlogged: what a round came later than the catch-up bound (max(burst, 20 ms) at rate) allows") \
	X(delivered, COUNTER, PACKETS, "tunless_queue_delivered_packets_total", "", "packets delivered with a sojourn time (the sojourn histogram's count)") \
	X(sojourn_p50_ns, GAUGE, NS, "tunless_queue_sojourn_p50_seconds", "", "median sojourn time of delivered packets (upper edge of its histogram bucket, at most the max)") \
	X(sojourn_p99_ns, GAUGE, NS, "tunless_queue_sojourn_p99_seconds", "", "99th percentile sojourn time of delivered packets") \
	X(sojourn_max_ns, GAUGE, NS, "tunless_queue_sojourn_max_seconds", "", "longest sojourn time of a delivered packet") \
	X(sparse_served, COUNTER, PACKETS, "tunless_queue_served_packets_total", "class=\"sparse\"", "delivered packets the DRR served from the new-flows list (sparse flows)") \
	X(bulk_served, COUNTER, PACKETS, "tunless_queue_served_packets_total", "class=\"bulk\"", "delivered packets the DRR served from the old list (bulk flows); sparse_served + bulk_served = delivered") \
	X(sparse_sojourn_p99_ns, GAUGE, NS, "tunless_queue_class_sojourn_p99_seconds", "class=\"sparse\"", "99th percentile sojourn time of sparse packets (at most their max)") \
	X(bulk_sojourn_p99_ns, GAUGE, NS, "tunless_queue_class_sojourn_p99_seconds", "class=\"bulk\"", "99th percentile sojourn time of bulk packets (at most their max)") \
	X(sparse_sojourn_max_ns, GAUGE, NS, "tunless_queue_class_sojourn_max_seconds", "class=\"sparse\"", "longest sojourn time of a sparse packet") \
	X(bulk_sojourn_max_ns, GAUGE, NS, "tunless_queue_class_sojourn_max_seconds", "class=\"bulk\"", "longest sojourn time of a bulk packet") \
	X(sparse_ahead_p99_bytes, GAUGE, BYTES, "tunless_queue_served_ahead_p99_bytes", "class=\"sparse\"", "99th percentile of the bytes the queue served between a sparse packet's arrival and its own service (at most their max)") \
	X(bulk_ahead_p99_bytes, GAUGE, BYTES, "tunless_queue_served_ahead_p99_bytes", "class=\"bulk\"", "99th percentile of the bytes served ahead of a bulk packet (at most their max)") \
	X(sparse_ahead_max_bytes, GAUGE, BYTES, "tunless_queue_served_ahead_max_bytes", "class=\"sparse\"", "most bytes served ahead of a sparse packet: the DRR bounds it by quantum + largest packet - 1 per flow ahead of it on the new list, plus under a quantum of its own flow, whatever the bulk backlog") \
	X(bulk_ahead_max_bytes, GAUGE, BYTES, "tunless_queue_served_ahead_max_bytes", "class=\"bulk\"", "most bytes served ahead of a bulk packet: at least its own flow's backlog ahead of it") \
	X(aqm_target_us, GAUGE, US, "tunless_aqm_target_seconds", "", "CoDel target in force: from rtt_us or target_us, at least two frame times at the shaped rate") \
	X(aqm_interval_us, GAUGE, US, "tunless_aqm_interval_seconds", "", "CoDel interval in force: from rtt_us or interval_us (lengthened with the target's floor)") \
	X(aqm_rtt_us, GAUGE, US, "tunless_aqm_rtt_seconds", "", "rtt setting the target and interval derive from (0: target_us and interval_us)") \
	X(aqm_l4s_us, GAUGE, US, "tunless_aqm_l4s_step_seconds", "", "sojourn at which ECT(1) packets are marked CE (0: off)") \
	X(aqm_flow_rtt_pct, GAUGE, NONE, "tunless_aqm_flow_rtt_percent", "", "a TCP flow's target is at least this percentage of its measured round trip (0: off)") \
	X(aqm_quantum, GAUGE, BYTES, "tunless_aqm_quantum_bytes", "", "DRR quantum in force: aqm_quantum_fast while the queue is not shaped below 1 Gbit/s (when larger), else the quantum setting") \
	X(aqm_quantum_fast, GAUGE, BYTES, "tunless_aqm_quantum_fast_bytes", "", "DRR quantum setting for a queue not shaped below 1 Gbit/s (0: the quantum setting always)") \
	X(aqm_flows, GAUGE, NONE, "tunless_aqm_flows", "", "flow hash buckets") \
	X(aqm_limit, GAUGE, PACKETS, "tunless_aqm_limit_packets", "", "hard limit in packets") \
	X(aqm_memory_limit, GAUGE, BYTES, "tunless_aqm_memory_limit_bytes", "", "hard limit in bytes of packet buffers") \
	X(aqm_byte_limit, GAUGE, BYTES, "tunless_aqm_byte_limit_bytes", "", "hard limit in packet bytes from the shaped rate: 4 intervals at rate, at least 4 MiB (0: no shaper)") \
	X(aqm_ecn, GAUGE, BOOL, "tunless_aqm_ecn", "", "1: ECT packets are marked instead of dropped") \
	X(shaper_rate_bps, GAUGE, BPS, "tunless_shaper_rate_bits_per_second", "", "shaper rate in force, 0 = no shaper") \
	X(shaper_burst_bytes, GAUGE, BYTES, "tunless_shaper_burst_bytes", "", "shaper bucket depth in force (0 = no shaper)")
#define TL_STATS_QUEUE_STRINGS "port, worker"

#define TL_STATS_WORKER(X) \
	X(lcore, GAUGE, NONE, "tunless_worker_lcore", "", "the EAL lcore it runs on") \
	X(owner, GAUGE, BOOL, "tunless_worker_owner", "", "1: owns a queue pair of each port (reads, classifies, finishes jobs in order, sends); every worker seals and opens") \
	X(busy_polls, COUNTER, NONE, "tunless_worker_polls_total", "state=\"busy\"", "rounds that did work") \
	X(idle_polls, COUNTER, NONE, "tunless_worker_polls_total", "state=\"idle\"", "rounds that found nothing") \
	X(shaper_sleeps, COUNTER, NONE, "tunless_worker_shaper_sleeps_total", "", "idle rounds that slept to the shaper's next send slot (a gap of 50 us or more; shorter ones are spun through)") \
	X(busy_ns, COUNTER, NS, "tunless_worker_busy_seconds_total", "", "time in rounds that did work; rate(busy) / rate(loop) is the busy share over a window") \
	X(loop_ns, COUNTER, NS, "tunless_worker_loop_seconds_total", "", "time in the loop (busy and idle rounds)") \
	X(busy_percent, GAUGE, PERCENT, "tunless_worker_busy_percent", "", "share of the last second spent in rounds that did work") \
	X(crypto_jobs, COUNTER, JOBS, "tunless_worker_crypto_jobs_total", "", "crypto jobs (bursts of one owner and direction) this worker sealed or opened") \
	X(crypto_packets, COUNTER, PACKETS, "tunless_worker_crypto_packets_total", "", "packets this worker sealed or opened, for any owner") \
	X(inflight_encap, GAUGE, PACKETS, "tunless_worker_inflight_packets", "dir=\"encap\"", "owners: packets of its queues in crypto jobs now, to be sealed or sent") \
	X(inflight_decap, GAUGE, PACKETS, "tunless_worker_inflight_packets", "dir=\"decap\"", "owners: packets of its queues in crypto jobs now, to be opened or finished") \
	X(job_fifo_encap, GAUGE, JOBS, "tunless_worker_job_fifo_jobs", "dir=\"encap\"", "owners: sealing jobs submitted and not yet finished (the in-order FIFO's depth)") \
	X(job_fifo_decap, GAUGE, JOBS, "tunless_worker_job_fifo_jobs", "dir=\"decap\"", "owners: opening jobs submitted and not yet finished") \
	X(crypto_backpressure_encap, COUNTER, NONE, "tunless_worker_crypto_backpressure_total", "dir=\"encap\"", "owners: rounds with packets but no free crypto job, the WAN egress queue not dequeued") \
	X(crypto_backpressure_decap, COUNTER, NONE, "tunless_worker_crypto_backpressure_total", "dir=\"decap\"", "owners: rounds with packets but no free crypto job, the WAN RX queue not read")
#define TL_STATS_WORKER_STRINGS "worker"

#define TL_STATS_PEER(X) \
	X(handshakes, COUNTER, NONE, "tunless_peer_handshakes_total", "", "completed handshakes") \
	X(last_handshake, GAUGE, SECONDS, "wireguard_peer_last_handshake_seconds", "", "UNIX time of the latest completed handshake, 0 = never") \
	X(session, GAUGE, BOOL, "tunless_peer_session", "", "1: a usable session exists") \
	X(rx_bytes, COUNTER, BYTES, "wireguard_peer_receive_bytes_total", "", "bytes of data messages received from the peer, as wg show counts them") \
	X(tx_bytes, COUNTER, BYTES, "wireguard_peer_transmit_bytes_total", "", "bytes of data messages sent to the peer") \
	X(rx_packets, COUNTER, PACKETS, "tunless_peer_rx_packets_total", "", "data packets received from the peer") \
	X(tx_packets, COUNTER, PACKETS, "tunless_peer_tx_packets_total", "", "data packets sent to the peer") \
	X(staged, GAUGE, PACKETS, "tunless_peer_staged_packets", "", "packets waiting for a session") \
	X(persistent_keepalive, GAUGE, SECONDS, "tunless_peer_persistent_keepalive_seconds", "", "persistent keepalive interval, 0 = off")
#define TL_STATS_PEER_STRINGS "name, public_key, endpoint, allowed_ips"

/* The sections, for code that walks them all: X(section, table macro). */
#define TL_STATS_SECTIONS(X) \
	X(device, TL_STATS_DEVICE) \
	X(ports, TL_STATS_PORT) \
	X(queues, TL_STATS_QUEUE) \
	X(workers, TL_STATS_WORKER) \
	X(peers, TL_STATS_PEER)

#endif
