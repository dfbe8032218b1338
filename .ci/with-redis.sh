#!/usr/bin/env bash
# Runs a command with a private, throwaway redis-server on a free loopback
# port, exported as REDIS_URL, and a private 3-node Redis Cluster (3
# primaries, no replicas), exported as REDIS_CLUSTER_URL. Installs
# redis-server with apt-get when it is missing and we are root.
# Usage: .ci/with-redis.sh COMMAND [ARGS...]
# WITH_REDIS_CLUSTER=0 skips the cluster.
set -euo pipefail
if ! command -v redis-server >/dev/null; then
	if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
		echo "with-redis.sh: installing redis-server" >&2
		apt-get update -qq >&2 && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq redis-server >&2
	else
		echo "with-redis.sh: redis-server not found; install it (apt-get install redis-server)" >&2
		exit 1
	fi
fi
free_port() {
	python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])' 2>/dev/null ||
		(for p in $(seq 20000 29999 | shuf); do (exec 3<>/dev/tcp/127.0.0.1/$p) 2>/dev/null || { echo $p; break; }; done)
}
dir=$(mktemp -d)
ports=()
cleanup() {
	for p in "${ports[@]}"; do
		redis-cli -p "$p" shutdown nosave >/dev/null 2>&1 || kill "$(cat "$dir/$p/redis.pid" 2>/dev/null)" 2>/dev/null || true
	done
	rm -rf "$dir"
}
trap cleanup EXIT
# start PORT [ARGS...]: a redis-server on PORT in $dir/PORT, waited on.
start() {
	local p=$1
	shift
	mkdir -p "$dir/$p"
	ports+=("$p")
	redis-server --port "$p" --bind 127.0.0.1 --save "" --appendonly no --dir "$dir/$p" \
		--daemonize yes --pidfile "$dir/$p/redis.pid" --logfile "$dir/$p/redis.log" "$@"
	for _ in $(seq 1 100); do redis-cli -p "$p" ping >/dev/null 2>&1 && return 0; sleep 0.05; done
	echo "with-redis.sh: redis-server on port $p did not start" >&2
	cat "$dir/$p/redis.log" >&2
	exit 1
}
port=$(free_port)
start "$port"
export REDIS_URL="redis://127.0.0.1:$port/0"
echo "with-redis.sh: private redis at $REDIS_URL" >&2

if [ "${WITH_REDIS_CLUSTER:-1}" != 0 ]; then
	nodes=()
	for _ in 1 2 3; do
		p=$(free_port)
		# The bus port is given: the default (port+10000) may be taken or past 65535.
		start "$p" --cluster-enabled yes --cluster-config-file "$dir/$p/nodes.conf" --cluster-node-timeout 5000 \
			--cluster-port "$(free_port)"
		nodes+=("127.0.0.1:$p")
	done
	redis-cli --cluster create "${nodes[@]}" --cluster-replicas 0 --cluster-yes >"$dir/cluster-create.log" 2>&1 || {
		echo "with-redis.sh: redis-cli --cluster create failed" >&2
		cat "$dir/cluster-create.log" >&2
		exit 1
	}
	# Every node must agree the cluster is up (all 16384 slots served).
	for n in "${nodes[@]}"; do
		ok=
		for _ in $(seq 1 200); do
			if redis-cli -p "${n##*:}" cluster info 2>/dev/null | grep -q '^cluster_state:ok'; then
				ok=1
				break
			fi
			sleep 0.05
		done
		[ -n "$ok" ] || { echo "with-redis.sh: cluster node $n never reached cluster_state:ok" >&2; exit 1; }
	done
	REDIS_CLUSTER_URL="redis+cluster://$(IFS=,; echo "${nodes[*]}")/"
	export REDIS_CLUSTER_URL
	echo "with-redis.sh: private 3-node redis cluster at $REDIS_CLUSTER_URL" >&2
fi
"$@"
