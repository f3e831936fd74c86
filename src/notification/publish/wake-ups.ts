import { hash } from 'node:crypto';

/**
 * The wake-up a publish transaction sends as it commits: one NOTIFY on WAKE_CHANNEL for the whole
 * transaction, whose payload names every recipient it stored for, each by a key of KEY_LENGTH
 * characters (the start of the recipient's MD5, base64url), one after another. So a transaction
 * of 1,300 recipients fits in PostgreSQL's 8,000-byte payload, and each instance is woken once per
 * transaction, not once per recipient. A key stands for its recipient only as far as waking goes:
 * two recipients with one key (one chance in 2^36 per pair) cost one read that finds nothing new.
 *
 * The previous release sent one NOTIFY per recipient on PREVIOUS_RELEASE_CHANNEL, the recipient as
 * the payload, and its instances listen only there; both are read here, and both are sent while
 * an instance of that release is listening (see PreviousReleaseListenersService).
 */
export const WAKE_CHANNEL = 'vc_wake';
export const PREVIOUS_RELEASE_CHANNEL = 'vc_notification';

const KEY_LENGTH = 6;
/** PostgreSQL refuses a NOTIFY payload of 8,000 bytes or more. */
const MAX_PAYLOAD_BYTES = 7_999;
const KEYS_PER_PAYLOAD = Math.floor(MAX_PAYLOAD_BYTES / KEY_LENGTH);

/** The key that wakes `recipient`. */
export function wakeKey(recipient: string): string {
  return hash('md5', recipient, 'base64url').slice(0, KEY_LENGTH);
}

/** The payloads that wake `recipients`: one, unless there are more than fit in one NOTIFY. */
export function wakePayloads(recipients: Iterable<string>): string[] {
  const keys = [...new Set([...recipients].map(wakeKey))];
  const payloads: string[] = [];
  for (let start = 0; start < keys.length; start += KEYS_PER_PAYLOAD) payloads.push(keys.slice(start, start + KEYS_PER_PAYLOAD).join(''));
  return payloads;
}

/** The keys a payload names (a payload not of this format names none). */
export function wakeKeysIn(payload: string): string[] {
  if (payload.length % KEY_LENGTH !== 0) return [];
  const keys: string[] = [];
  for (let start = 0; start < payload.length; start += KEY_LENGTH) keys.push(payload.slice(start, start + KEY_LENGTH));
  return keys;
}
