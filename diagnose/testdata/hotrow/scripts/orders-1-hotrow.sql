-- Every order bumps one global counter row: a hot row.
\set n random(1, 1000)
BEGIN;
UPDATE counter SET n = n + 1 WHERE id = 1;
INSERT INTO orders (qty) VALUES (:n);
COMMIT;
