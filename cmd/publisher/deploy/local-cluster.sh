#!/usr/bin/env bash
# Runs the topology of docker-compose.yml from images built on this machine, for hosts that
# cannot pull images: static binaries on an empty base (the publisher, nats-server from the
# module this repository depends on, Caddy). Then, under read load through the balancer and
# admin writes every 200 ms, it kills the NATS server that leads the event log, brings it back,
# and prints what held: reads answered and their statuses, revisions served by each read node
# (never one older than a revision it served before), writes acknowledged and refused, the
# longest time writes were refused, and whether every acknowledged write is served.
#
#   cmd/publisher/deploy/local-cluster.sh        # needs docker, docker compose (or docker-compose), wrk, curl
#   KEEP=1 cmd/publisher/deploy/local-cluster.sh # leaves the topology running
set -euo pipefail

repo=$(cd "$(dirname "$0")/../../.." && pwd)
work=$(mktemp -d)
project=publisher-local

if docker compose version >/dev/null 2>&1; then dc=(docker compose); else dc=(docker-compose); fi
compose=("${dc[@]}" -p "$project" --project-directory "$repo" -f "$repo/docker-compose.yml" -f "$work/override.yml" --env-file "$work/env")

say() { printf '%s %s\n' "$(date +%T)" "$*"; }

say "building the images (build-images.sh)"
IMAGE_PREFIX=$project "$repo/cmd/publisher/deploy/build-images.sh" >"$work/images"
docker images --format '{{.Repository}}:{{.Tag}} {{.Size}}' | grep "^$project/"

token=$(openssl rand -hex 24)
cp "$work/images" "$work/env"
cat >>"$work/env" <<EOF
PUBLISHER_ADMIN_TOKEN=$token
PUBLISHER_SECRET_KEYS=$(openssl rand -base64 32)
NATS_PASSWORD=$(openssl rand -hex 24)
NATS_ROUTE_PASSWORD=$(openssl rand -hex 24)
GRAFANA_ADMIN_PASSWORD=$(openssl rand -hex 24)
EOF
# For the measurement only: quotas off, and each read node also on the host's loopback (through
# the balancer's network, the others being internal) so that the revisions each one serves can
# be followed.
cat >"$work/override.yml" <<'EOF'
services:
  api-1:
    environment: {PUBLISHER_QUOTA_KEY: "-1", PUBLISHER_QUOTA_IP: "-1"}
    ports: ["127.0.0.1:18081:8080"]
    networks: [nats, web, edge]
  api-2:
    environment: {PUBLISHER_QUOTA_KEY: "-1", PUBLISHER_QUOTA_IP: "-1"}
    ports: ["127.0.0.1:18082:8080"]
    networks: [nats, web, edge]
EOF

cleanup() {
	jobs -p | xargs -r kill 2>/dev/null || true
	if [ -z "${KEEP:-}" ]; then
		"${compose[@]}" down -v >/dev/null 2>&1 || true
		rm -rf "$work"
	fi
}
trap cleanup EXIT

say "starting the topology"
started=$(date +%s)
# Prometheus and Grafana have no image built here: every other service starts.
"${compose[@]}" up -d --no-build nats-1 nats-2 nats-3 api-1 api-2 projector webhook clock admin lb 2>&1 | tail -n 3
admin=http://127.0.0.1:8081
auth=(-H "Authorization: Bearer $token" -H "Content-Type: application/json")
# waitfor URL...: until each answers 2xx, for at most two minutes.
waitfor() {
	local deadline=$(($(date +%s) + 120))
	until curl -fs "$@" >/dev/null 2>&1; do
		if [ "$(date +%s)" -gt "$deadline" ]; then
			echo "not ready within 2 minutes: ${*: -1}"
			"${compose[@]}" logs --tail 20
			exit 1
		fi
		sleep 0.5
	done
}
waitfor "${auth[@]}" "$admin/admin/v1/status"
waitfor http://127.0.0.1:8080/readyz
say "ready in $(($(date +%s) - started)) s"

reply=$(curl -s "${auth[@]}" -X PUT --data-binary @"$repo/cmd/publisher/demo.json" "$admin/admin/v1/establishments/chez-marcel?wait=true" || true)
key=$(printf '%s' "$reply" | sed -n 's/.*"api_key":"\([^"]*\)".*/\1/p')
[ -n "$key" ] || { echo "import: $reply"; "${compose[@]}" logs --tail 20; exit 1; }
path=/api/v1/establishments/chez-marcel
waitfor -H "X-Api-Key: $key" "http://127.0.0.1:8080$path"

# Each read node followed: a regression is a revision lower than one the same node served before.
follow() {
	local port=$1 last=0 n=0 back=0 bad=0 rev code body
	while [ ! -e "$work/stop" ]; do
		body=$(curl -s -w '\n%{http_code}' -H "X-Api-Key: $key" "http://127.0.0.1:$port$path" || true)
		code=${body##*$'\n'}
		rev=$(printf '%s' "$body" | sed -n 's/.*"content_revision":\([0-9]*\).*/\1/p' | head -n 1)
		n=$((n + 1))
		if [ "$code" != 200 ]; then bad=$((bad + 1)); fi
		if [ -n "$rev" ]; then
			if [ "$rev" -lt "$last" ]; then back=$((back + 1)); fi
			if [ "$rev" -gt "$last" ]; then last=$rev; fi
		fi
		sleep 0.02
	done
	echo "read node :$port: $n reads, $bad not 200, $back revisions going back, last revision $last" >"$work/follow-$port"
}
follow 18081 &
follow 18082 &

# Writes: a new name every 200 ms, each retried with its idempotency key until acknowledged.
writes() {
	local i=0 acked=0 refused=0 gap_start=0 longest=0 now code
	while [ ! -e "$work/stop" ]; do
		i=$((i + 1))
		sed "s/\"name\": \"Chez Marcel\"/\"name\": \"Chez Marcel $i\"/" "$repo/cmd/publisher/demo.json" >"$work/body"
		while :; do
			code=$(curl -s -o /dev/null -w '%{http_code}' -m 10 "${auth[@]}" -H "Idempotency-Key: write-$i" \
				-X PUT --data-binary @"$work/body" "$admin/admin/v1/establishments/chez-marcel" || echo 000)
			now=$(date +%s%N)
			if [ "$code" = 200 ] || [ "$code" = 201 ]; then
				acked=$((acked + 1))
				echo "$i" >"$work/last-acked"
				if [ "$gap_start" != 0 ]; then
					longest=$(((now - gap_start) / 1000000 > longest ? (now - gap_start) / 1000000 : longest))
					gap_start=0
				fi
				break
			fi
			refused=$((refused + 1))
			echo "$code" >>"$work/refusals"
			[ "$gap_start" = 0 ] && gap_start=$now
			sleep 0.2 # retried until acknowledged, even after the stop: its outcome must be known
		done
		sleep 0.2
	done
	echo "writes: $acked acknowledged, $refused attempts refused (statuses: $(sort "$work/refusals" 2>/dev/null | uniq -c | tr -s ' \n' ' ')), writes refused for at most ${longest} ms" >"$work/writes"
}
touch "$work/refusals"
writes &

say "read load through the balancer: wrk, 60 s"
wrk -t2 -c16 -d60s -H "X-Api-Key: $key" "http://127.0.0.1:8080$path" >"$work/wrk" 2>&1 &
wrk_pid=$!
sleep 10
leader=$(curl -s -m 5 "${auth[@]}" "$admin/admin/v1/status" | sed -n 's/.*"log_placement":{"leader":"\([^"]*\)".*/\1/p' || true)
if [ -n "$leader" ]; then
	say "killing $leader, the event log's leader"
else
	leader=nats-2
	say "killing $leader (the status did not name the event log's leader)"
fi
"${compose[@]}" kill "$leader" >/dev/null 2>&1
sleep 20
new_leader=$(curl -s -m 5 "${auth[@]}" "$admin/admin/v1/status" | sed -n 's/.*"log_placement":{"leader":"\([^"]*\)".*/\1/p' || true)
say "leader now ${new_leader:-unknown}; starting $leader again"
"${compose[@]}" start "$leader" >/dev/null 2>&1
wait "$wrk_pid" || true
touch "$work/stop"
wait

last=$(cat "$work/last-acked" 2>/dev/null || echo 0)
sleep 2
served_18081=$(curl -s -H "X-Api-Key: $key" "http://127.0.0.1:18081$path" | sed -n 's/.*"name":"\([^"]*\)".*/\1/p' | head -n 1 || true)
served_18082=$(curl -s -H "X-Api-Key: $key" "http://127.0.0.1:18082$path" | sed -n 's/.*"name":"\([^"]*\)".*/\1/p' | head -n 1 || true)

echo
echo "== what held =="
grep -E 'requests in|Non-2xx|Socket errors|Requests/sec' "$work/wrk" | sed 's/^ */reads through the balancer: /'
grep -q 'Non-2xx' "$work/wrk" || echo "reads through the balancer: every answer 2xx"
cat "$work/follow-18081" "$work/follow-18082" "$work/writes"
echo "last acknowledged write: \"Chez Marcel $last\"; served by api-1: \"$served_18081\", by api-2: \"$served_18082\""
if [ "$served_18081" = "Chez Marcel $last" ] && [ "$served_18082" = "Chez Marcel $last" ]; then
	echo "every acknowledged write is served"
else
	echo "ACKNOWLEDGED WRITE NOT SERVED"
	exit 1
fi
