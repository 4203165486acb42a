\set id random(1, 100000)
SELECT n FROM items WHERE id = :id;
