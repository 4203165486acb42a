-- The remedy: the same lock and update without a savepoint (a no-op SELECT
-- keeps the statement count), so one transaction id holds the tuple and its
-- xmax stays a plain xid: no MultiXact is created. Sent as one pipeline, as
-- multixact.sql is.
\set aid random(1, 100000 * :scale)
\set delta random(-5000, 5000)
\startpipeline
BEGIN;
SELECT abalance FROM pgbench_accounts WHERE aid = :aid FOR UPDATE;
SELECT 1;
UPDATE pgbench_accounts SET abalance = abalance + :delta WHERE aid = :aid;
COMMIT;
\endpipeline
