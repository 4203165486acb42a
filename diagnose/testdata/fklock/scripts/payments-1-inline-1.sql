\set id random(1, 5)
BEGIN;
SELECT balance FROM accounts WHERE id = :id FOR UPDATE;
SELECT pg_sleep(0.02);
UPDATE accounts SET balance = balance - 1 WHERE id = :id;
COMMIT;
