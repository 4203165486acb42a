\set n random(1, 100000)
SELECT id, price FROM items WHERE name = 'item ' || :n;
