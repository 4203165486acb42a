\set k random(1, 1000)
UPDATE kv SET v = v + 1 WHERE k = :k;
SELECT v FROM kv WHERE k = :k;
