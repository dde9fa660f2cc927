-- Var(L) per interval type (docs/fleet.md). Group '' holds every interval; each label with at
-- least 2 intervals is a group of its own, as in the analyzer (docs/statistics.md, "Groups").
-- Population moments in two passes: the group's mean first (grp_stats), then the squares of
-- the centred latencies. Standard SQL over the tables intervals and node_times.
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
)
SELECT g.grp AS label,
       CAST(g.n AS BIGINT) AS intervals,
       g.mean_l AS mean_ns,
       SUM((x.latency_ns - g.mean_l) * (x.latency_ns - g.mean_l)) / g.n AS var_ns2
FROM grouped x
JOIN grp_stats g ON x.grp = g.grp
GROUP BY g.grp, g.n, g.mean_l
ORDER BY label
