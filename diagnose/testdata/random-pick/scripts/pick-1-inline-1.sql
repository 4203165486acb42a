SELECT id, name FROM items ORDER BY random() LIMIT 5;
