-- The same cart, its SKUs sorted before locking: one global lock order.
\set a random(1, :skus)
\set b random(1, :skus)
\set c random(1, :skus)
\set sku1 least(:a, :b, :c)
\set sku3 greatest(:a, :b, :c)
\set sku2 :a + :b + :c - :sku1 - :sku3
BEGIN;
UPDATE stock SET qty = qty - 1 WHERE sku = :sku1;
UPDATE stock SET qty = qty - 1 WHERE sku = :sku2;
UPDATE stock SET qty = qty - 1 WHERE sku = :sku3;
COMMIT;
