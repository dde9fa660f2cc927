-- Every tree node's statistics per interval type (docs/fleet.md): the mean and variance of its
-- time T and body time B on the critical path, their covariance with L (the contribution:
-- Cov(T, L) / Var(L); the root's is 1, a node's is the sum of its children's and its body's)
-- and the share Var(T) / Var(L). Population moments, centred by the group's means (two
-- passes). A node has no row for an interval its critical path did not touch: there T = B = 0,
-- which the (n - k) terms add, k being the intervals with a row:
--   n Var(X)    = sum_rows (X - m)^2 + (n - k) m^2
--   n Cov(X, L) = sum_rows (X - m) dL - m sum_absent dL,  sum_absent dL = sum_all dL - sum_rows dL
-- with dL = L - mean(L). node_times carries each row's label and L, so its rows join only
-- small tables (groups, labels, per-node means). Standard SQL over intervals and node_times.
WITH grouped AS (
  SELECT '' AS grp, latency_ns FROM intervals
  UNION ALL
  SELECT label AS grp, latency_ns FROM intervals WHERE label <> ''
),
grp_stats AS (
  SELECT grp, CAST(COUNT(*) AS DOUBLE) AS n, SUM(latency_ns) / CAST(COUNT(*) AS DOUBLE) AS mean_l
  FROM grouped
  GROUP BY grp
  HAVING grp = '' OR COUNT(*) >= 2
),
grp_var AS (
  SELECT g.grp, g.n, g.mean_l,
         SUM((x.latency_ns - g.mean_l) * (x.latency_ns - g.mean_l)) / g.n AS var_l,
         SUM(x.latency_ns - g.mean_l) AS sum_dl
  FROM grouped x
  JOIN grp_stats g ON x.grp = g.grp
  GROUP BY g.grp, g.n, g.mean_l
),
member AS (
  -- which groups a label's intervals belong to: '' and (when it is a group) its own
  SELECT g.grp, l.label
  FROM grp_stats g
  JOIN (SELECT DISTINCT label FROM intervals) l ON g.grp = '' OR g.grp = l.label
),
node_means AS (
  SELECT v.grp, t.node, CAST(COUNT(*) AS DOUBLE) AS k,
         SUM(t.t_ns) / v.n AS mean_t, SUM(t.b_ns) / v.n AS mean_b,
         SUM(t.latency_ns - v.mean_l) AS rows_dl
  FROM node_times t
  JOIN member s ON s.label = t.label
  JOIN grp_var v ON v.grp = s.grp
  GROUP BY v.grp, t.node, v.n, v.mean_l
),
node_moments AS (
  SELECT m.grp, m.node, MIN(t.frames) AS frames, v.var_l, m.mean_t, m.mean_b,
         (SUM((t.t_ns - m.mean_t) * (t.t_ns - m.mean_t)) + (v.n - m.k) * m.mean_t * m.mean_t)
           / v.n AS var_t,
         (SUM((t.b_ns - m.mean_b) * (t.b_ns - m.mean_b)) + (v.n - m.k) * m.mean_b * m.mean_b)
           / v.n AS var_b,
         (SUM((t.t_ns - m.mean_t) * (t.latency_ns - v.mean_l))
           - m.mean_t * (v.sum_dl - m.rows_dl)) / v.n AS cov_tl,
         (SUM((t.b_ns - m.mean_b) * (t.latency_ns - v.mean_l))
           - m.mean_b * (v.sum_dl - m.rows_dl)) / v.n AS cov_bl
  FROM node_times t
  JOIN member s ON s.label = t.label
  JOIN grp_var v ON v.grp = s.grp
  JOIN node_means m ON m.grp = s.grp AND m.node = t.node
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
