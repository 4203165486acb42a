-- A nested-transaction pattern (jOOQ nested=true, Spring's nested
-- @Transactional): lock the row, open a savepoint, update the same row.
-- The row's xmax becomes a MultiXact (the outer lock + the subtransaction's
-- update).
\set aid random(1, 100000 * :scale)
\set delta random(-5000, 5000)
BEGIN;
SELECT abalance FROM pgbench_accounts WHERE aid = :aid FOR UPDATE;
SAVEPOINT nested;
UPDATE pgbench_accounts SET abalance = abalance + :delta WHERE aid = :aid;
RELEASE SAVEPOINT nested;
COMMIT;
