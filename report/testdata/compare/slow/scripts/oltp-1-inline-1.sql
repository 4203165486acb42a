\set id random(1, 1000)
SELECT balance FROM acct WHERE id = :id;
UPDATE acct SET balance = balance + 1 WHERE id = :id;
SELECT pg_sleep(0.008);
SELECT pg_sleep(0.002);
