-- A virtual stock: one row per SKU with the quantity left, in InnoDB.
-- Orders hit a small hot set (the first :hot SKUs, see the scenarios'
-- defines) far more than the rest, as promotions and staples do.
CREATE TABLE stock (
    sku INT PRIMARY KEY,
    qty INT NOT NULL
) ENGINE=InnoDB;
INSERT INTO stock (sku, qty) SELECT seq, 1000000000 FROM seq_1_to_10000;
ANALYZE TABLE stock;
