UPDATE counter SET n = n + 1 WHERE id = 1;
