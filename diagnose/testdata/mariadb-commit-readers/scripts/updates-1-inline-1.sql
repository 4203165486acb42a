\set k random(1, 100000)
UPDATE kv SET v = v + 1 WHERE k = :k;
