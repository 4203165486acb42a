\set aid random(1, 100000 * :scale)
\set delta random(-5000, 5000)
BEGIN;
SELECT bump(:aid, :delta);
COMMIT;
