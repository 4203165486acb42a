\set id random(1, 1000)
SELECT balance FROM accounts WHERE id = :id;
