\set uid random(1, 10000)
GET /journals?user=:uid&limit=20
Accept: application/json
\check status == 200
\gset cursor = $.next_cursor
GET /journals?user=:uid&cursor=:cursor&limit=20
Accept: application/json
\check status == 200
