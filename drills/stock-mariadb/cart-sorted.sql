-- The same order, with the cart sorted by SKU before anything is locked:
-- every transaction takes its row locks in one global order, so a wait can
-- never close a cycle. The compare-and-swap steps below are what a sort()
-- call does in the application (a sorting network for five items; empty
-- places are 0, sort first and are skipped).
\set items random(3, 5)
\set s1 CASE WHEN random(1, 100) <= :hot_pct THEN random(1, :hot) ELSE random(:hot + 1, 10000) END
\set s2 CASE WHEN random(1, 100) <= :hot_pct THEN random(1, :hot) ELSE random(:hot + 1, 10000) END
\set s3 CASE WHEN random(1, 100) <= :hot_pct THEN random(1, :hot) ELSE random(:hot + 1, 10000) END
\set s4 CASE WHEN :items >= 4 THEN CASE WHEN random(1, 100) <= :hot_pct THEN random(1, :hot) ELSE random(:hot + 1, 10000) END ELSE 0 END
\set s5 CASE WHEN :items >= 5 THEN CASE WHEN random(1, 100) <= :hot_pct THEN random(1, :hot) ELSE random(:hot + 1, 10000) END ELSE 0 END
\set t least(:s1, :s2)
\set s2 greatest(:s1, :s2)
\set s1 :t
\set t least(:s4, :s5)
\set s5 greatest(:s4, :s5)
\set s4 :t
\set t least(:s3, :s5)
\set s5 greatest(:s3, :s5)
\set s3 :t
\set t least(:s3, :s4)
\set s4 greatest(:s3, :s4)
\set s3 :t
\set t least(:s1, :s4)
\set s4 greatest(:s1, :s4)
\set s1 :t
\set t least(:s1, :s3)
\set s3 greatest(:s1, :s3)
\set s1 :t
\set t least(:s2, :s5)
\set s5 greatest(:s2, :s5)
\set s2 :t
\set t least(:s2, :s4)
\set s4 greatest(:s2, :s4)
\set s2 :t
\set t least(:s2, :s3)
\set s3 greatest(:s2, :s3)
\set s2 :t
BEGIN;
\if :s1 > 0
UPDATE stock SET qty = qty - 1 WHERE sku = :s1;
\endif
\if :s2 > 0
UPDATE stock SET qty = qty - 1 WHERE sku = :s2;
\endif
UPDATE stock SET qty = qty - 1 WHERE sku = :s3;
UPDATE stock SET qty = qty - 1 WHERE sku = :s4;
UPDATE stock SET qty = qty - 1 WHERE sku = :s5;
COMMIT;
