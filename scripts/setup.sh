#!/usr/bin/env bash
# Installs what firedrill needs on a Debian machine and builds it.
# Safe to run again: it installs only what is missing.
set -euo pipefail
cd "$(dirname "$0")/.."

need=()
have_pg_server() {
	command -v postgres >/dev/null 2>&1 || ls /usr/lib/postgresql/*/bin/postgres >/dev/null 2>&1
}
have_pg_server || need+=(postgresql postgresql-contrib)
command -v pgbench >/dev/null 2>&1 || ls /usr/lib/postgresql/*/bin/pgbench >/dev/null 2>&1 || need+=(postgresql-contrib)
command -v useradd >/dev/null 2>&1 || need+=(passwd)
# The slow disk of disk_pressure (mode: slow) is a small C library
# firedrill compiles at run time (internal/slowdisk).
command -v cc >/dev/null 2>&1 || command -v gcc >/dev/null 2>&1 || need+=(gcc libc6-dev)
# The HTML report's tests render it in headless Chromium.
command -v chromium >/dev/null 2>&1 || need+=(chromium)

if [ ${#need[@]} -gt 0 ]; then
	echo "setup: installing Debian packages: ${need[*]}"
	SUDO=""
	[ "$(id -u)" -ne 0 ] && SUDO="sudo"
	$SUDO apt-get update -qq
	DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${need[@]}"
	# Debian's package starts a cluster on 5432; firedrill never uses it
	# and leaves it alone.
else
	echo "setup: PostgreSQL server binaries, pgbench and chromium present"
fi

if ! command -v go >/dev/null 2>&1; then
	echo "setup: Go is missing; install Go 1.24 or newer (https://go.dev/dl) and run again" >&2
	exit 1
fi
go mod download
mkdir -p bin
go build -o bin/firedrill ./cmd/firedrill
echo "setup: built bin/firedrill"
