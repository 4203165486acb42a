\set a random(1, 80000)
SELECT aid, abalance FROM pgbench_accounts WHERE aid BETWEEN :a AND :a + 20000 ORDER BY filler, abalance LIMIT 5000;
