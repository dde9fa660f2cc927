-- The places table per interval type (docs/fleet.md; docs/statistics.md, "Places"): a place's
-- time in an interval is the sum of the body times B of its nodes (all its calling contexts,
-- the waker's contexts below waits included), X_p(s) = sum B_n(s); its share is
-- Var(X_p) / Var(L) and its contribution Cov(X_p, L) / Var(L) (over all places — the root's
-- body among them, "outside probed functions" — and untracked time, they sum to 1). Moments as in nodes.sql: centred by
-- the group's means, intervals without the place adding X = 0 through the (n - k) terms.
-- Standard SQL over the tables intervals and node_times.
WITH grouped AS (
  SELECT '' AS grp, host, run, interval_id, latency_ns FROM intervals
  UNION ALL
  SELECT label AS grp, host, run, interval_id, latency_ns FROM intervals WHERE label <> ''
),
grp_stats AS (
  SELECT grp, CAST(COUNT(*) AS DOUBLE) AS n, SUM(latency_ns) / CAST(COUNT(*) AS DOUBLE) AS mean_l
  FROM grouped
  GROUP BY grp
  HAVING grp = '' OR COUNT(*) >= 2
),
centred AS (
  SELECT x.grp, x.host, x.run, x.interval_id, x.latency_ns - g.mean_l AS dl
  FROM grouped x
  JOIN grp_stats g ON x.grp = g.grp
),
grp_var AS (
  SELECT c.grp, g.n, SUM(c.dl * c.dl) / g.n AS var_l, SUM(c.dl) AS sum_dl
  FROM centred c
  JOIN grp_stats g ON c.grp = g.grp
  GROUP BY c.grp, g.n
),
place_x AS (
  -- X_p(s) once per interval, before the groups multiply the rows
  SELECT host, run, interval_id, place, SUM(b_ns) AS x
  FROM node_times
  WHERE place IS NOT NULL
  GROUP BY host, run, interval_id, place
),
place_rows AS (
  SELECT c.grp, c.dl, p.place, p.x
  FROM centred c
  JOIN place_x p ON p.host = c.host AND p.run = c.run AND p.interval_id = c.interval_id
),
place_facts AS (
  SELECT g.grp, d.place, MIN(d.place_name) AS name, COUNT(DISTINCT d.node) AS contexts
  FROM (SELECT DISTINCT label, place, place_name, node FROM node_times
        WHERE place IS NOT NULL) d
  JOIN grp_stats g ON g.grp = '' OR g.grp = d.label
  GROUP BY g.grp, d.place
),
place_means AS (
  SELECT r.grp, r.place, CAST(COUNT(*) AS DOUBLE) AS k, SUM(r.x) / v.n AS mean_x,
         SUM(r.dl) AS rows_dl
  FROM place_rows r
  JOIN grp_var v ON r.grp = v.grp
  GROUP BY r.grp, r.place, v.n
),
place_moments AS (
  SELECT m.grp, m.place, v.var_l, m.mean_x,
         (SUM((r.x - m.mean_x) * (r.x - m.mean_x)) + (v.n - m.k) * m.mean_x * m.mean_x)
           / v.n AS var_x,
         (SUM((r.x - m.mean_x) * r.dl) - m.mean_x * (v.sum_dl - m.rows_dl)) / v.n AS cov_xl
  FROM place_rows r
  JOIN place_means m ON r.grp = m.grp AND r.place = m.place
  JOIN grp_var v ON v.grp = m.grp
  GROUP BY m.grp, m.place, m.k, m.mean_x, m.rows_dl, v.n, v.var_l, v.sum_dl
)
SELECT * FROM (
  SELECT p.grp AS label, p.place AS place, f.name AS name, f.contexts AS contexts,
         p.mean_x AS mean_ns, p.var_x AS var_ns2, p.cov_xl AS cov_l_ns2,
         CASE WHEN p.var_l > 0 THEN p.var_x / p.var_l ELSE 0 END AS share,
         CASE WHEN p.var_l > 0 THEN p.cov_xl / p.var_l ELSE 0 END AS contribution
  FROM place_moments p
  JOIN place_facts f ON f.grp = p.grp AND f.place = p.place
) result
ORDER BY label, contribution DESC, place
