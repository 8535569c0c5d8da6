-- kpi_daily_view: the stable core of `newsbench.kpi_daily`, recomputed from `newsbench.run_scores`.
--
-- One row per day x site x agent_version for slice_kind = 'all', plus the all-sites row
-- (site = '*'), with the same numbers the `kpi_daily` asset writes (core/kpis.py `_row`):
--   n_runs          every run of the group
--   n_scored        runs not excluded (environment failures, ambiguous tasks and void runs
--                   are excluded)
--   n_env_failures  excluded runs whose failure_class is neither 'ambiguous' nor
--                   'no_answer_at_run' (those two are nobody's failure)
--   n_void          excluded runs whose failure_class is 'no_answer_at_run'
--   successes       scored runs that succeeded
--   success_rate    successes / n_scored (NULL when nothing was scored)
--   success_ci_*    95 % Wilson score interval, z = 1.959964; exactly 0 at 0/n and 1 at n/n
--   mean_reward, mean_steps        means over scored runs
--   ttfc_p50, ttfc_p95  PERCENTILE_CONT (linear interpolation, as pandas `quantile`) over the
--                       scored runs' time to first correct answer, NULLs ignored
-- Runs without an agent_version are left out, as the asset's pandas groupby leaves them out.
-- Written once in BigQuery Standard SQL; `newsbench_dagster.core.analyst_sql` transpiles it
-- with sqlglot and runs it on the local DuckDB warehouse.
WITH runs AS (
  SELECT
    TIMESTAMP_TRUNC(day, DAY) AS day,
    site,
    agent_version,
    IFNULL(excluded, FALSE) AS excluded,
    IFNULL(success, FALSE) AS success,
    failure_class,
    reward,
    ttfc_seconds,
    steps
  FROM newsbench.run_scores
  WHERE agent_version IS NOT NULL
),

-- Every run counts once for its own site and once for the all-sites row '*'.
sited AS (
  SELECT day, site, agent_version, excluded, success, failure_class, reward, ttfc_seconds, steps
  FROM runs
  UNION ALL
  SELECT day, '*' AS site, agent_version, excluded, success, failure_class, reward, ttfc_seconds,
    steps
  FROM runs
),

counts AS (
  SELECT
    day,
    site,
    agent_version,
    COUNT(*) AS n_runs,
    COUNTIF(NOT excluded) AS n_scored,
    COUNTIF(
      excluded AND (failure_class IS NULL
        OR failure_class NOT IN ('ambiguous', 'no_answer_at_run'))
    ) AS n_env_failures,
    COUNTIF(excluded AND failure_class = 'no_answer_at_run') AS n_void,
    COUNTIF(NOT excluded AND success) AS successes,
    AVG(IF(excluded, NULL, reward)) AS mean_reward,
    AVG(IF(excluded, NULL, steps)) AS mean_steps
  FROM sited
  GROUP BY day, site, agent_version
),

-- PERCENTILE_CONT is analytic-only in BigQuery: one value per partition, then deduplicated.
ttfc AS (
  SELECT DISTINCT
    day,
    site,
    agent_version,
    PERCENTILE_CONT(IF(excluded, NULL, ttfc_seconds), 0.5)
      OVER (PARTITION BY day, site, agent_version) AS ttfc_p50,
    PERCENTILE_CONT(IF(excluded, NULL, ttfc_seconds), 0.95)
      OVER (PARTITION BY day, site, agent_version) AS ttfc_p95
  FROM sited
),

-- Wilson score interval terms (core/kpis.py `wilson`), in the same order of operations.
wilson AS (
  SELECT
    c.*,
    t.ttfc_p50,
    t.ttfc_p95,
    SAFE_DIVIDE(c.successes, c.n_scored) AS p,
    CAST(1.959964 AS FLOAT64) AS z,
    NULLIF(c.n_scored, 0) AS n
  FROM counts AS c
  JOIN ttfc AS t
    ON c.day = t.day AND c.site = t.site AND c.agent_version = t.agent_version
),

bounds AS (
  SELECT
    *,
    (p + z * z / (2 * n)) / (1 + z * z / n) AS centre,
    z * SQRT(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n) AS half
  FROM wilson
)

SELECT
  day,
  site,
  agent_version,
  'all' AS slice_kind,
  '*' AS slice_value,
  n_runs,
  n_scored,
  n_env_failures,
  n_void,
  successes,
  p AS success_rate,
  CASE
    WHEN n IS NULL THEN NULL
    WHEN successes = 0 THEN 0.0
    ELSE GREATEST(0.0, centre - half)
  END AS success_ci_low,
  CASE
    WHEN n IS NULL THEN NULL
    WHEN successes = n_scored THEN 1.0
    ELSE LEAST(1.0, centre + half)
  END AS success_ci_high,
  mean_reward,
  ttfc_p50,
  ttfc_p95,
  mean_steps
FROM bounds
