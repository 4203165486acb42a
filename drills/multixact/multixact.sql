-- The nested-transaction pattern: lock the row, open a savepoint (what a
-- nested @Transactional or jOOQ's nested=true does), update the same row
-- inside it. Two transaction ids of one session now hold the tuple (the
-- outer one's lock, the subtransaction's update), so PostgreSQL records its
-- xmax as a MultiXact.
--
-- The transaction goes to the server as one pipeline: on a small machine
-- that also runs the load generator, the database, not the client's round
-- trips, then sets the pace, as it does in production where many
-- application servers share one database.
\set aid random(1, 100000 * :scale)
\set delta random(-5000, 5000)
\startpipeline
BEGIN;
SELECT abalance FROM pgbench_accounts WHERE aid = :aid FOR UPDATE;
SAVEPOINT nested;
UPDATE pgbench_accounts SET abalance = abalance + :delta WHERE aid = :aid;
RELEASE SAVEPOINT nested;
COMMIT;
\endpipeline
