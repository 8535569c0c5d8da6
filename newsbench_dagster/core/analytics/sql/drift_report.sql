-- drift_report: per site, how often its pages or feeds changed under us since @since, from
-- `newsbench.site_drift` (one row per drift check: site x day, at checked_at).
--
-- Parameter: @since (TIMESTAMP), the first day to report, e.g. '2026-11-01 00:00:00'.
--   checks              drift checks in the window
--   days_checked        distinct days checked
--   template_changes    checks that saw the page template's fingerprint change
--   volume_anomalies    checks whose feed volume was anomalous (feed_z)
--   drifted_checks      checks that marked the site drifted (excluded from gating until the
--                       baseline is re-established)
--   last_drift_day      the last day the site was marked drifted (NULL: never in the window)
--   drifted_now         whether the site's latest check marked it drifted
--   drift_sensitivity   mean baseline success delta on checks that saw a template change
--                       (the KPI "delta in success rate after site template changes")
--   max_abs_feed_z      the largest feed-volume z-score seen
WITH checks AS (
  SELECT
    site,
    TIMESTAMP_TRUNC(day, DAY) AS day,
    checked_at,
    IFNULL(template_changed, FALSE) AS template_changed,
    IFNULL(volume_anomaly, FALSE) AS volume_anomaly,
    IFNULL(drifted, FALSE) AS drifted,
    baseline_delta,
    feed_z
  FROM newsbench.site_drift
  WHERE day >= @since
),

latest AS (
  SELECT site, drifted AS drifted_now
  FROM checks
  WHERE TRUE
  QUALIFY ROW_NUMBER() OVER (PARTITION BY site ORDER BY day DESC, checked_at DESC) = 1
),

per_site AS (
  SELECT
    site,
    COUNT(*) AS checks,
    COUNT(DISTINCT day) AS days_checked,
    COUNTIF(template_changed) AS template_changes,
    COUNTIF(volume_anomaly) AS volume_anomalies,
    COUNTIF(drifted) AS drifted_checks,
    MAX(IF(drifted, day, NULL)) AS last_drift_day,
    AVG(IF(template_changed, baseline_delta, NULL)) AS drift_sensitivity,
    MAX(ABS(feed_z)) AS max_abs_feed_z
  FROM checks
  GROUP BY site
)

SELECT
  s.site,
  s.checks,
  s.days_checked,
  s.template_changes,
  s.volume_anomalies,
  s.drifted_checks,
  s.last_drift_day,
  l.drifted_now,
  s.drift_sensitivity,
  s.max_abs_feed_z
FROM per_site AS s
JOIN latest AS l
  ON s.site = l.site
ORDER BY s.site
