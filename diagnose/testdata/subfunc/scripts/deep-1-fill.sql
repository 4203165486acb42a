\set a random(1, 98000 * :scale)
BEGIN;
SELECT fill(:a);
COMMIT;
