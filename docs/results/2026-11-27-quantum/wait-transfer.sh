# Sourced by this page's probes: wait_transfer <pid of a bench/throughput.sh run> waits (at most
# 60 s) until that run's client iperf3 is running, the transfer has begun, and sets NS to the
# client's namespace (the gateways' are ${NS%-client}-gwa and -gwb).
wait_transfer() {
	NS=
	for _ in $(seq 600); do
		NS=$(ip netns list | awk -v re="^bt${1}[0-9]+-client$" '$1 ~ re { print $1 }' | tail -n 1)
		if [ -n "$NS" ] && ip netns pids "$NS" | xargs -r -n1 sh -c 'cat /proc/$0/comm' 2>/dev/null | grep -qx iperf3; then
			return 0
		fi
		sleep 0.1
	done
	return 1
}
