-- release_gate: candidate vs baseline success per site for one candidate version, from
-- `newsbench.candidate_scores` (the seed's release-gate query, made honest).
--
-- Parameters: @candidate_version (STRING), @min_tasks (INT64).
-- Rows: only the attempt a rerun settled on (counted = TRUE) and only non-excluded runs
-- (environment failures and ambiguous tasks are nobody's success or failure).
--   n_candidate_runs, n_baseline_runs   those rows per role
--   candidate_success, baseline_success mean of success as 0/1 over those rows per role
--   delta            candidate_success - baseline_success (unpaired; different task mixes
--                    per role would bias it)
--   paired_delta     mean over the tasks run by both roles of
--                    (task's candidate success rate - task's baseline success rate)
--   n_paired_tasks   the tasks run by both roles
--   verdict          'insufficient_evidence' when n_paired_tasks < @min_tasks, else
--                    'regressed' when paired_delta < -0.025, else 'ok'
-- One row per site and one all-sites row (site = '*'), whose paired_delta is the point
-- estimate of the gate's difference (`core/release/sequential.py`).
--
-- This is a POINT-ESTIMATE SCREEN for analysts, not the gate. The release gate itself
-- (`core/release/decide.py`, `core/release/sequential.py`) is sequential: it passes when the
-- low end of a repeated confidence interval of the paired difference is above -0.05 and
-- blocks when its high end is below 0 (at least 20 tasks over 3 sites to pass); -0.025 is
-- where its pass turns into block. A site can read 'ok' here and the version still be
-- blocked, or the reverse.
WITH scored AS (
  SELECT
    site,
    task_id,
    role,
    IF(IFNULL(success, FALSE), 1, 0) AS won
  FROM newsbench.candidate_scores
  WHERE candidate_version = @candidate_version
    AND IFNULL(counted, FALSE)
    AND NOT IFNULL(excluded, FALSE)
    AND role IN ('candidate', 'baseline')
),

sited AS (
  SELECT site, task_id, role, won FROM scored
  UNION ALL
  SELECT '*' AS site, task_id, role, won FROM scored
),

by_role AS (
  SELECT
    site,
    COUNTIF(role = 'candidate') AS n_candidate_runs,
    COUNTIF(role = 'baseline') AS n_baseline_runs,
    AVG(IF(role = 'candidate', won, NULL)) AS candidate_success,
    AVG(IF(role = 'baseline', won, NULL)) AS baseline_success
  FROM sited
  GROUP BY site
),

per_task AS (
  SELECT
    site,
    task_id,
    AVG(IF(role = 'candidate', won, NULL)) AS candidate_rate,
    AVG(IF(role = 'baseline', won, NULL)) AS baseline_rate
  FROM sited
  GROUP BY site, task_id
),

paired AS (
  SELECT
    site,
    AVG(candidate_rate - baseline_rate) AS paired_delta,
    COUNT(*) AS n_paired_tasks
  FROM per_task
  WHERE candidate_rate IS NOT NULL AND baseline_rate IS NOT NULL
  GROUP BY site
)

SELECT
  r.site,
  r.n_candidate_runs,
  r.n_baseline_runs,
  r.candidate_success,
  r.baseline_success,
  r.candidate_success - r.baseline_success AS delta,
  p.paired_delta,
  IFNULL(p.n_paired_tasks, 0) AS n_paired_tasks,
  CASE
    WHEN IFNULL(p.n_paired_tasks, 0) < @min_tasks THEN 'insufficient_evidence'
    WHEN p.paired_delta < -0.025 THEN 'regressed'
    ELSE 'ok'
  END AS verdict
FROM by_role AS r
LEFT JOIN paired AS p
  ON r.site = p.site
ORDER BY r.site
