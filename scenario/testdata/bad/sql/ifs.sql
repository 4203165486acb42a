\if :x
SELECT 1;
