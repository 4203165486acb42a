-- Several orders per commit: four carts (3 to 5 SKUs each, drawn as in
-- the other variants) in one transaction, so one redo log flush covers
-- four orders instead of one. The batch still locks in SKU order: the
-- SELECT … ORDER BY sku FOR UPDATE takes every row lock it needs, sorted
-- (a primary key range read in key order), before the UPDATE changes rows
-- the transaction already holds.
\set items1 random(3, 5)
\set c1s1 CASE WHEN random(1, 100) <= :hot_pct THEN random(1, :hot) ELSE random(:hot + 1, 10000) END
\set c1s2 CASE WHEN random(1, 100) <= :hot_pct THEN random(1, :hot) ELSE random(:hot + 1, 10000) END
\set c1s3 CASE WHEN random(1, 100) <= :hot_pct THEN random(1, :hot) ELSE random(:hot + 1, 10000) END
\set c1s4 CASE WHEN :items1 >= 4 THEN CASE WHEN random(1, 100) <= :hot_pct THEN random(1, :hot) ELSE random(:hot + 1, 10000) END ELSE 0 END
\set c1s5 CASE WHEN :items1 >= 5 THEN CASE WHEN random(1, 100) <= :hot_pct THEN random(1, :hot) ELSE random(:hot + 1, 10000) END ELSE 0 END
\set items2 random(3, 5)
\set c2s1 CASE WHEN random(1, 100) <= :hot_pct THEN random(1, :hot) ELSE random(:hot + 1, 10000) END
\set c2s2 CASE WHEN random(1, 100) <= :hot_pct THEN random(1, :hot) ELSE random(:hot + 1, 10000) END
\set c2s3 CASE WHEN random(1, 100) <= :hot_pct THEN random(1, :hot) ELSE random(:hot + 1, 10000) END
\set c2s4 CASE WHEN :items2 >= 4 THEN CASE WHEN random(1, 100) <= :hot_pct THEN random(1, :hot) ELSE random(:hot + 1, 10000) END ELSE 0 END
\set c2s5 CASE WHEN :items2 >= 5 THEN CASE WHEN random(1, 100) <= :hot_pct THEN random(1, :hot) ELSE random(:hot + 1, 10000) END ELSE 0 END
\set items3 random(3, 5)
\set c3s1 CASE WHEN random(1, 100) <= :hot_pct THEN random(1, :hot) ELSE random(:hot + 1, 10000) END
\set c3s2 CASE WHEN random(1, 100) <= :hot_pct THEN random(1, :hot) ELSE random(:hot + 1, 10000) END
\set c3s3 CASE WHEN random(1, 100) <= :hot_pct THEN random(1, :hot) ELSE random(:hot + 1, 10000) END
\set c3s4 CASE WHEN :items3 >= 4 THEN CASE WHEN random(1, 100) <= :hot_pct THEN random(1, :hot) ELSE random(:hot + 1, 10000) END ELSE 0 END
\set c3s5 CASE WHEN :items3 >= 5 THEN CASE WHEN random(1, 100) <= :hot_pct THEN random(1, :hot) ELSE random(:hot + 1, 10000) END ELSE 0 END
\set items4 random(3, 5)
\set c4s1 CASE WHEN random(1, 100) <= :hot_pct THEN random(1, :hot) ELSE random(:hot + 1, 10000) END
\set c4s2 CASE WHEN random(1, 100) <= :hot_pct THEN random(1, :hot) ELSE random(:hot + 1, 10000) END
\set c4s3 CASE WHEN random(1, 100) <= :hot_pct THEN random(1, :hot) ELSE random(:hot + 1, 10000) END
\set c4s4 CASE WHEN :items4 >= 4 THEN CASE WHEN random(1, 100) <= :hot_pct THEN random(1, :hot) ELSE random(:hot + 1, 10000) END ELSE 0 END
\set c4s5 CASE WHEN :items4 >= 5 THEN CASE WHEN random(1, 100) <= :hot_pct THEN random(1, :hot) ELSE random(:hot + 1, 10000) END ELSE 0 END
BEGIN;
SELECT sku FROM stock WHERE sku IN (:c1s1, :c1s2, :c1s3, :c1s4, :c1s5, :c2s1, :c2s2, :c2s3, :c2s4, :c2s5, :c3s1, :c3s2, :c3s3, :c3s4, :c3s5, :c4s1, :c4s2, :c4s3, :c4s4, :c4s5) ORDER BY sku FOR UPDATE;
UPDATE stock s JOIN (
    SELECT sku, COUNT(*) AS n FROM (
        SELECT :c1s1 AS sku
        UNION ALL SELECT :c1s2
        UNION ALL SELECT :c1s3
        UNION ALL SELECT :c1s4
        UNION ALL SELECT :c1s5
        UNION ALL SELECT :c2s1
        UNION ALL SELECT :c2s2
        UNION ALL SELECT :c2s3
        UNION ALL SELECT :c2s4
        UNION ALL SELECT :c2s5
        UNION ALL SELECT :c3s1
        UNION ALL SELECT :c3s2
        UNION ALL SELECT :c3s3
        UNION ALL SELECT :c3s4
        UNION ALL SELECT :c3s5
        UNION ALL SELECT :c4s1
        UNION ALL SELECT :c4s2
        UNION ALL SELECT :c4s3
        UNION ALL SELECT :c4s4
        UNION ALL SELECT :c4s5
    ) AS batch WHERE sku > 0 GROUP BY sku
) AS w ON w.sku = s.sku
SET s.qty = s.qty - w.n;
COMMIT;
