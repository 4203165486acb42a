-- One small update per transaction, each on its own row: nothing to wait
-- for but the commit's WAL flush.
\set id random(1, 100000)
UPDATE items SET n = n + 1 WHERE id = :id;
