\set id random(1, 5)
INSERT INTO order_lines (account_id, qty) VALUES (:id, 1);
