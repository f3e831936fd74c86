export const HEARTBEAT_FLAGS = '--heartbeat <seconds>';

/**
 * `--heartbeat SECONDS|default`, parsed: digits are seconds; anything else stays as given, for
 * heartbeatSetting to read `default` and the validation to refuse the rest with the rule
 * (CreateClientDto). The parser cannot turn `default` into null itself: commander stores a null
 * from a parser as ''.
 */
export function parseHeartbeat(value: string): number | string {
  return /^\d{1,9}$/.test(value) ? Number(value) : value;
}

/** The option as the client record takes it: `default` is null (the instance's WS_HEARTBEAT_INTERVAL); not given, undefined. */
export function heartbeatSetting(option: number | string | undefined): number | string | null | undefined {
  return option === 'default' ? null : option;
}
