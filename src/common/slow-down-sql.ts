// The counting rule every slow-down of login_failures shares (failed sign-ins, wrong user codes),
// as SQL fragments for an upsert into `login_failures AS f`.

/** Failures older than this no longer count. */
const WINDOW_SECONDS = 15 * 60;
/** The longest wait one failure can cause. */
const MAX_DELAY_SECONDS = 15 * 60;

/** The row's failure count once one more failure is counted: a failure outside the window starts again at 1. */
export const NEXT_FAILURES_SQL = `CASE WHEN f.last_failure_at > now() - make_interval(secs => ${WINDOW_SECONDS}) THEN f.failures + 1 ELSE 1 END`;

/** The wait after the `failures`-th failure of a key with `free` free ones, as an interval: none while free, then doubling. */
export const slowDownDelaySql = (failures: string, free: string | number) =>
  `make_interval(secs => CASE WHEN ${failures} < ${free} THEN 0 ELSE LEAST(power(2, ${failures} - ${free}), ${MAX_DELAY_SECONDS}) END)`;
