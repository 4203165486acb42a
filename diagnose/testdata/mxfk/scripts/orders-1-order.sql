\set c1 random(1, 200)
\set c2 random(1, 200)
\set c3 random(1, 200)
\set c4 random(1, 200)
BEGIN;
INSERT INTO order_lines (customer_id, qty) VALUES (:c1, 1);
INSERT INTO order_lines (customer_id, qty) VALUES (:c2, 2);
INSERT INTO order_lines (customer_id, qty) VALUES (:c3, 3);
INSERT INTO order_lines (customer_id, qty) VALUES (:c4, 4);
COMMIT;
