-- A virtual stock: one row per SKU with the quantity left. Orders hit a
-- small hot set (the first :hot SKUs, see the scenarios' defines) far more
-- than the rest, as promotions and staples do.
CREATE TABLE stock (
    sku integer PRIMARY KEY,
    qty integer NOT NULL
);
INSERT INTO stock (sku, qty) SELECT g, 1000000000 FROM generate_series(1, 10000) AS g;
ANALYZE stock;
