#!/bin/sh
# Build the firedrill image with podman and check it (internal/kube's
# TestImageBuildsAndRuns), on a machine that cannot reach Docker Hub: the
# base is Debian bookworm made with debootstrap from deb.debian.org and
# imported; the build stage is that base with this machine's Go toolchain
# and module cache mounted (no module is downloaded). RUN steps use chroot
# isolation: no container runtime (crun) is needed.
#
#   apt-get install -y podman debootstrap && scripts/image-test.sh
set -eu
cd "$(dirname "$0")/.."
base=localhost/firedrill-bookworm
gobase=localhost/firedrill-go
rootfs=${ROOTFS:-/tmp/firedrill-bookworm-rootfs}
if ! podman image exists "$base"; then
	[ -x "$rootfs/bin/sh" ] || debootstrap --variant=minbase bookworm "$rootfs" http://deb.debian.org/debian
	tar -C "$rootfs" -c . | podman import - "$base"
fi
ctx=$(mktemp -d)
trap 'rm -rf "$ctx"' EXIT
printf 'FROM %s\nENV PATH=/usr/local/go/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin GOPROXY=off GOFLAGS=-mod=mod GOTOOLCHAIN=local GOMODCACHE=/go/pkg/mod\n' "$base" |
	podman build -t "$gobase" -f - "$ctx"
FIREDRILL_IMAGE_TEST=1 FIREDRILL_GO_IMAGE=$gobase FIREDRILL_BASE_IMAGE=$base \
	FIREDRILL_IMAGE_BUILD_ARGS="--isolation chroot -v $(go env GOROOT):/usr/local/go:ro -v $(go env GOMODCACHE):/go/pkg/mod" \
	go test -count=1 -timeout 40m -run '^TestImageBuildsAndRuns$' -v ./internal/kube/
