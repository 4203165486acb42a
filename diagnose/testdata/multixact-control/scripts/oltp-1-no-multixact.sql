-- The control: the same lock and update without a savepoint (a no-op
-- SELECT in its place), so the row's xmax stays a plain transaction id.
\set aid random(1, 100000 * :scale)
\set delta random(-5000, 5000)
BEGIN;
SELECT abalance FROM pgbench_accounts WHERE aid = :aid FOR UPDATE;
SELECT 1;
UPDATE pgbench_accounts SET abalance = abalance + :delta WHERE aid = :aid;
COMMIT;
