-- SPDX-License-Identifier: MIT (bench/outside: one of the sweep's programs)
CREATE TABLE t(id INTEGER PRIMARY KEY, a INTEGER, b TEXT, c REAL);
WITH RECURSIVE r(i) AS (SELECT 1 UNION ALL SELECT i+1 FROM r WHERE i < 800000)
INSERT INTO t SELECT i, (i*7919)%100003, printf('%.*c%d', 40, 'z', i), i*0.5 FROM r;
CREATE INDEX ta ON t(a); CREATE INDEX tb ON t(b);
SELECT count(*), sum(a), sum(length(b)) FROM t;
SELECT a, count(*) FROM t GROUP BY a ORDER BY count(*) DESC, a LIMIT 5;
SELECT sum(c) FROM t WHERE a BETWEEN 1000 AND 5000;
SELECT b FROM t ORDER BY b DESC LIMIT 3;
