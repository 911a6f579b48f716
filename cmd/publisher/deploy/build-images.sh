#!/usr/bin/env bash
# Builds the images of docker-compose.yml with no registry: each a static binary built on this
# machine (by Go, from its module proxy or module cache) on an empty base, with the Dockerfiles
# of scratch/ beside this script:
#
#   publisher  this checkout's binary, with this machine's CA bundle ($SSL_CERT_FILE if set)
#   nats       nats-server at the version go.mod requires: the server the tests run
#   caddy      the balancer
#
# Progress goes to stderr; stdout gets the lines that point docker-compose.yml at the images,
# ready for .env. Prometheus and Grafana are not built here.
#
#   cmd/publisher/deploy/build-images.sh >> .env                  # all three, named opencarte/...
#   cmd/publisher/deploy/build-images.sh publisher nats >> .env   # only these
#   IMAGE_PREFIX=mine cmd/publisher/deploy/build-images.sh        # named mine/publisher, ...
set -euo pipefail

repo=$(cd "$(dirname "$0")/../../.." && pwd)
dockerfiles="$repo/cmd/publisher/deploy/scratch"
prefix=${IMAGE_PREFIX:-opencarte}
caddy_version=v2.11.9
ca=${SSL_CERT_FILE:-/etc/ssl/certs/ca-certificates.crt}
images=("$@")
[ ${#images[@]} -gt 0 ] || images=(publisher nats caddy)
for image in "${images[@]}"; do
	case $image in
	publisher | nats | caddy) ;;
	*)
		echo "build-images.sh: unknown image \"$image\": want publisher, nats or caddy" >&2
		exit 2
		;;
	esac
done

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export CGO_ENABLED=0

# build NAME TAG: the image from the context $work/NAME, named TAG, and its line for .env.
build() {
	echo "building the image $2" >&2
	docker build -q -f "$dockerfiles/$1.Dockerfile" -t "$2" "$work/$1" >/dev/null
	echo "$(echo "$1" | tr '[:lower:]' '[:upper:]')_IMAGE=$2"
}

for image in "${images[@]}"; do
	echo "building $image's binary" >&2
	case $image in
	publisher)
		mkdir -p "$work/publisher/data"
		cp "$ca" "$work/publisher/ca-certificates.crt"
		(cd "$repo" && go build -trimpath -ldflags=-s -o "$work/publisher/publisher" ./cmd/publisher)
		build publisher "$prefix/publisher"
		;;
	nats)
		version=$(cd "$repo" && go list -m -f '{{.Version}}' github.com/nats-io/nats-server/v2)
		mkdir -p "$work/nats"
		(cd "$repo" && go build -trimpath -ldflags=-s -o "$work/nats/nats-server" github.com/nats-io/nats-server/v2)
		build nats "$prefix/nats:${version#v}"
		;;
	caddy)
		mkdir -p "$work/caddy/data" "$work/caddy/config"
		(cd "$work" && GOBIN="$work/caddy" go install -trimpath -ldflags=-s "github.com/caddyserver/caddy/v2/cmd/caddy@$caddy_version")
		build caddy "$prefix/caddy:${caddy_version#v}"
		;;
	esac
done
