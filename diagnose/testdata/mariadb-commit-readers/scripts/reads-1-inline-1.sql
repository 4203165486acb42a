\set k random(1, 100000)
SELECT v FROM kv WHERE k = :k;
