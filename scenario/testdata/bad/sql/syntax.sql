\set id random(1, 1000
SELECT :id;
