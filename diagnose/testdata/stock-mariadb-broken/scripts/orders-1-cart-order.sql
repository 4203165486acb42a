-- One order: a cart of 3 to 5 items, each decremented in the order the
-- customer put it in the cart. An item is one of the hot SKUs (1 to :hot)
-- with probability :hot_pct %, otherwise one of the other SKUs of the
-- 10,000 in schema.sql. Two carts that share two SKUs in opposite order
-- each lock one and wait for the other: a cycle that InnoDB breaks
-- at once, by rolling one of them back (error 1213).
-- An empty place in the cart is 0.
\set items random(3, 5)
\set s1 CASE WHEN random(1, 100) <= :hot_pct THEN random(1, :hot) ELSE random(:hot + 1, 10000) END
\set s2 CASE WHEN random(1, 100) <= :hot_pct THEN random(1, :hot) ELSE random(:hot + 1, 10000) END
\set s3 CASE WHEN random(1, 100) <= :hot_pct THEN random(1, :hot) ELSE random(:hot + 1, 10000) END
\set s4 CASE WHEN :items >= 4 THEN CASE WHEN random(1, 100) <= :hot_pct THEN random(1, :hot) ELSE random(:hot + 1, 10000) END ELSE 0 END
\set s5 CASE WHEN :items >= 5 THEN CASE WHEN random(1, 100) <= :hot_pct THEN random(1, :hot) ELSE random(:hot + 1, 10000) END ELSE 0 END
BEGIN;
UPDATE stock SET qty = qty - 1 WHERE sku = :s1;
UPDATE stock SET qty = qty - 1 WHERE sku = :s2;
UPDATE stock SET qty = qty - 1 WHERE sku = :s3;
\if :s4 > 0
UPDATE stock SET qty = qty - 1 WHERE sku = :s4;
\endif
\if :s5 > 0
UPDATE stock SET qty = qty - 1 WHERE sku = :s5;
\endif
COMMIT;
