// Package scenario reads scenario files: the YAML that says what a run
// does (target, setup, workloads, events, thresholds). Decoding is strict:
// unknown keys and values of the wrong type are errors, and Load reports
// every problem in the file at once as Errors, each at file:line:col with a
// hint, scripts and SQL files included (a script's own errors carry its
// file's position). README.md in this directory is the full reference.
//
// A scenario that uses every key:
//
//	# A scenario that uses every key. Files are relative to this file.
//	name: multixact                       # required: lower-case letters, digits, . _ -
//	description: Row locks taken FOR SHARE by many clients thrash the multixact SLRU.
//	target:                               # optional; leave it out for the embedded server
//	  # dsn: postgres://app@db:5432/stage # your server instead (then no settings)
//	  settings:                           # embedded server only; any scalar, kept as text
//	    synchronous_commit: "off"
//	    shared_buffers: 256MB
//	    max_connections: 200
//	    fsync: false
//	setup:                                # runs once, before any workload
//	  pgbench: {scale: 1}                 # pgbench -i tables at this scale
//	  sql:                                # in order: files, inline SQL, or plain strings
//	    - {file: schema.sql}
//	    - {inline: "CREATE INDEX ON accounts (balance)"}
//	    - CREATE TABLE audit (id bigserial PRIMARY KEY, at timestamptz)
//	  schema: firedrill                   # default firedrill; "public" opts out
//	sample_interval: 500ms                # default 1s; 100ms to 60s
//	duration: 5m                          # default: the latest stop, stages' end or event end
//	workloads:
//	  - name: oltp                        # required, unique: lower-case letters, digits, _ -
//	    scripts:                          # at least one
//	      - {file: multixact.sql, weight: 9}
//	      - {builtin: select, name: pgbench-select}   # a builtin by name or prefix
//	      - {inline: "SELECT 1;", name: ping}
//	      - other.sql@2                   # shorthand: a file (has . or /) or a builtin, @weight
//	    clients: 8                        # closed model: 8 clients, each as fast as it goes
//	    start: 0s
//	    stop: 3m                          # default: the end of the run
//	    mode: prepared                    # simple (default), extended, prepared
//	    seed: 42
//	    pool: 5                           # the 8 clients share 5 connections
//	    pool_timeout: 10s                 # default 30s with pool
//	    max_tries: 3                      # retries of serialization failures and deadlocks
//	    latency_limit: 50ms
//	    defines: {accounts: 1000, label: hot}   # pgbench -D
//	    scale: 2                          # :scale; default setup's pgbench scale, or 1
//	    settings: {statement_timeout: 5s, lock_timeout: 1s}   # SET on every connection
//	  - name: reports
//	    scripts:
//	      - inline: |
//	          \set id random(1, 1000)
//	          SELECT sum(balance) FROM accounts WHERE id <= :id;
//	    rate: 2000                        # open model: 2000 tx/s, by 20 clients (1 per 100/s, at least 8)
//	    start: 10s
//	  - name: ramp
//	    scripts: [tpcb-like@1]
//	    stages:                           # all clients or all rate; linear from the last value
//	      - {duration: 30s, clients: 16}
//	      - {duration: 1m, clients: 4}
//	    start: 1m
//	events:
//	  - name: long-tx                     # default <kind>-<place in this list>
//	    kind: hold_transaction
//	    at: 60s
//	    duration: 120s
//	    isolation: repeatable read        # read committed (default), repeatable read, serializable
//	    xid: true
//	    sql: "SELECT txid_current()"      # a statement or a list of them
//	  - {kind: sql, at: 90s, sql: ["CREATE INDEX CONCURRENTLY ON accounts (id, balance)", "ANALYZE accounts"]}
//	  - {kind: settings, at: 30s, settings: {idle_in_transaction_session_timeout: 10s}, restart: false}
//	  - {kind: terminate, at: 40s, workload: oltp}
//	  - {kind: terminate, at: 45s, pid: 1234}
//	  - {kind: disk_pressure, at: 10s, duration: 30s, size: 512MB, rate: 50MB/s, path: /tmp}
//	  - {kind: shell, at: 5s, command: "sync"}     # runs only with --allow-shell
//	thresholds:                           # quote conditions: > and ! mean something to YAML
//	  oltp.p99: "< 50ms"
//	  oltp.error_rate: "< 0.1%"
//	  reports.tps: [">= 1900", "<= 2100"]
//	  db.deadlocks: "== 0"
//	  db.slru_hit_rate_min.multixact_member: ">= 90%"
//	  finding.deadlock: absent
//	abort_on_failure: {ratio: 0.9, for: 10s}   # stop (exit 1) when 90% fail for 10 s; default all for 5s; false: never
//
// Durations are Go's syntax ("90s", "1m30s", "250ms") or a bare number of
// seconds. Sizes are a number and a unit: B, kB, MB, GB, TB are powers of
// 1000 and KiB, MiB, GiB, TiB powers of 1024 (a bare number is bytes);
// disk_pressure's rate is a size per second ("50MB/s").
//
// A workload's load shape is clients (the closed model), rate (the open
// model, carried by clients, by default one per 100/s and at least 8), or
// stages that all set clients or all set rate. An event's kind decodes
// its own keys (Options.EventKinds, the README has the table); a key that
// does not apply to the kind is an error. Thresholds name a metric of the table in thresholds.go:
// <workload>.<metric>, db.<metric> or finding.<rule-id>.
//
// After Load every defaulted field holds its default and Duration holds the
// run's length, so users of a Scenario need not know the defaults.
package scenario
