-- A random sample of accounts, sorted by random(): no index can give
-- this order, so every call sorts (and past work_mem spills) the rows.
SELECT aid, abalance FROM pgbench_accounts WHERE aid <= 40000 ORDER BY random() LIMIT 5000;
