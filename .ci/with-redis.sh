#!/usr/bin/env bash
# Runs a command with a private, throwaway redis-server on a free loopback
# port, exported as REDIS_URL. Installs redis-server with apt-get when it is
# missing and we are root. Usage: .ci/with-redis.sh COMMAND [ARGS...]
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
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])' 2>/dev/null ||
	(for p in $(seq 20000 20999 | shuf); do (exec 3<>/dev/tcp/127.0.0.1/$p) 2>/dev/null || { echo $p; break; }; done))
dir=$(mktemp -d)
redis-server --port "$port" --bind 127.0.0.1 --save "" --appendonly no --dir "$dir" \
	--daemonize yes --pidfile "$dir/redis.pid" --logfile "$dir/redis.log"
cleanup() { redis-cli -p "$port" shutdown nosave >/dev/null 2>&1 || kill "$(cat "$dir/redis.pid")" 2>/dev/null || true; rm -rf "$dir"; }
trap cleanup EXIT
for _ in $(seq 1 100); do redis-cli -p "$port" ping >/dev/null 2>&1 && break; sleep 0.05; done
redis-cli -p "$port" ping >/dev/null || { echo "with-redis.sh: redis-server did not start" >&2; cat "$dir/redis.log" >&2; exit 1; }
export REDIS_URL="redis://127.0.0.1:$port/0"
echo "with-redis.sh: private redis at $REDIS_URL" >&2
"$@"
