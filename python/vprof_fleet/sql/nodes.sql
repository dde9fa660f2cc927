-- Every tree node's statistics per interval type (docs/fleet.md): the mean and variance of its
-- time T and body time B on the critical path, their covariance with L (the contribution:
-- Cov(T, L) / Var(L); the root's is 1, a node's is the sum of its children's and its body's)
-- and the share Var(T) / Var(L). Population moments, centred by the group's means (two
-- passes). A node has no row for an interval its critical path did not touch: there T = B = 0,
-- which the (n - k) terms add, k being the intervals with a row:
--   n Var(X)    = sum_rows (X - m)^2 + (n - k) m^2
--   n Cov(X, L) = sum_rows (X - m) dL - m sum_absent dL,  sum_absent dL = sum_all dL - sum_rows dL
-- with dL = L - mean(L). Standard SQL over the tables intervals and node_times.
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
node_rows AS (
  SELECT c.grp, c.dl, t.node, t.frames, t.t_ns, t.b_ns
  FROM centred c
  JOIN node_times t ON t.host = c.host AND t.run = c.run AND t.interval_id = c.interval_id
),
node_means AS (
  SELECT r.grp, r.node, CAST(COUNT(*) AS DOUBLE) AS k,
         SUM(r.t_ns) / v.n AS mean_t, SUM(r.b_ns) / v.n AS mean_b, SUM(r.dl) AS rows_dl
  FROM node_rows r
  JOIN grp_var v ON r.grp = v.grp
  GROUP BY r.grp, r.node, v.n
),
node_moments AS (
  SELECT m.grp, m.node, MIN(r.frames) AS frames, v.var_l, m.mean_t, m.mean_b,
         (SUM((r.t_ns - m.mean_t) * (r.t_ns - m.mean_t)) + (v.n - m.k) * m.mean_t * m.mean_t)
           / v.n AS var_t,
         (SUM((r.b_ns - m.mean_b) * (r.b_ns - m.mean_b)) + (v.n - m.k) * m.mean_b * m.mean_b)
           / v.n AS var_b,
         (SUM((r.t_ns - m.mean_t) * r.dl) - m.mean_t * (v.sum_dl - m.rows_dl)) / v.n AS cov_tl,
         (SUM((r.b_ns - m.mean_b) * r.dl) - m.mean_b * (v.sum_dl - m.rows_dl)) / v.n AS cov_bl
  FROM node_rows r
  JOIN node_means m ON r.grp = m.grp AND r.node = m.node
  JOIN grp_var v ON v.grp = m.grp
  GROUP BY m.grp, m.node, m.k, m.mean_t, m.mean_b, m.rows_dl, v.n, v.var_l, v.sum_dl
)
SELECT grp AS label, node, frames,
       mean_t AS mean_ns, var_t AS var_ns2,
       mean_b AS body_mean_ns, var_b AS body_var_ns2,
       cov_tl AS cov_l_ns2, cov_bl AS body_cov_l_ns2,
       CASE WHEN var_l > 0 THEN var_t / var_l ELSE 0 END AS share,
       CASE WHEN var_l > 0 THEN cov_tl / var_l ELSE 0 END AS contribution,
       CASE WHEN var_l > 0 THEN cov_bl / var_l ELSE 0 END AS body_contribution
FROM node_moments
ORDER BY label, node
