-- A fast lookup, then application work while the connection is held.
\set id random(1, 100000)
BEGIN;
SELECT n FROM items WHERE id = :id;
\sleep 20 ms
COMMIT;
