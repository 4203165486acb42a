\set id random(1, 1000 * :scale)
BEGIN;
SELECT * FROM accounts WHERE id = :id FOR SHARE;
UPDATE accounts SET balance = balance + 1 WHERE id = :id;
END;
