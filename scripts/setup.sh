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
# Redis: firedrill starts its own throwaway redis-server (db/redis/instance);
# redis-tools brings redis-cli and redis-benchmark (bench/vs-redis-benchmark).
command -v redis-server >/dev/null 2>&1 || need+=(redis-server)
command -v redis-benchmark >/dev/null 2>&1 || need+=(redis-tools)
# MariaDB: firedrill starts its own throwaway mariadbd (db/mariadb/instance),
# which Debian keeps in /usr/sbin; mariadb-client brings the mariadb tool.
# Debian's own MariaDB service is not started (policy-rc.d below), and one
# already running on 3306 is left alone.
command -v mariadbd >/dev/null 2>&1 || [ -x /usr/sbin/mariadbd ] || need+=(mariadb-server)
command -v mariadb >/dev/null 2>&1 || need+=(mariadb-client)
# sysbench: the field's own MariaDB client, for bench/vs-sysbench.
command -v sysbench >/dev/null 2>&1 || need+=(sysbench)
# wrk: the field's closed-model HTTP load tool, for bench/vs-wrk.
command -v wrk >/dev/null 2>&1 || need+=(wrk)
# The HTML report's tests render it in headless Chromium.
command -v chromium >/dev/null 2>&1 || need+=(chromium)

if [ ${#need[@]} -gt 0 ]; then
	echo "setup: installing Debian packages: ${need[*]}"
	SUDO=""
	[ "$(id -u)" -ne 0 ] && SUDO="sudo"
	$SUDO apt-get update -qq
	# Database server packages (redis-server, mariadb-server) start their
	# service on the standard port when installed: firedrill never uses it,
	# and one already running there must be left alone. A policy-rc.d that
	# answers 101 ("action forbidden") keeps invoke-rc.d from starting
	# anything during the install; what was there before is put back.
	policy=/usr/sbin/policy-rc.d
	policy_saved=""
	if [ -e "$policy" ]; then
		policy_saved=$(mktemp)
		$SUDO cp -p "$policy" "$policy_saved"
	fi
	restore_policy() {
		if [ -n "$policy_saved" ]; then
			$SUDO cp -p "$policy_saved" "$policy" && $SUDO rm -f "$policy_saved"
		else
			$SUDO rm -f "$policy"
		fi
	}
	trap restore_policy EXIT
	printf '#!/bin/sh\n# firedrill setup: start no service while packages install\nexit 101\n' | $SUDO tee "$policy" >/dev/null
	$SUDO chmod 755 "$policy"
	DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${need[@]}"
	restore_policy
	trap - EXIT
	# Debian's postgresql package creates a cluster on 5432 (not started
	# here); firedrill never uses it and leaves it alone.
else
	echo "setup: PostgreSQL server binaries, pgbench, Redis, MariaDB, sysbench, wrk and chromium present"
fi

if ! command -v go >/dev/null 2>&1; then
	echo "setup: Go is missing; install Go 1.24 or newer (https://go.dev/dl) and run again" >&2
	exit 1
fi
go mod download
mkdir -p bin
go build -o bin/firedrill ./cmd/firedrill
echo "setup: built bin/firedrill"
