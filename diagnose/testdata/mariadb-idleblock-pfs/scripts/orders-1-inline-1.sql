\set id random(1, 20)
UPDATE counter SET n = n + 1 WHERE id = :id;
