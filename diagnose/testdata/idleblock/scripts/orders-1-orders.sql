\set q random(1, 5)
BEGIN;
INSERT INTO orders (qty) VALUES (:q);
UPDATE counter SET n = n + :q WHERE id = 1;
COMMIT;
