-- A cart decrements three SKUs in the order the customer added them.
\set sku1 random(1, :skus)
\set sku2 random(1, :skus)
\set sku3 random(1, :skus)
BEGIN;
UPDATE stock SET qty = qty - 1 WHERE sku = :sku1;
UPDATE stock SET qty = qty - 1 WHERE sku = :sku2;
UPDATE stock SET qty = qty - 1 WHERE sku = :sku3;
COMMIT;
