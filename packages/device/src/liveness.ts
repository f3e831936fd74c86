/** A connection's beat is known once this many heartbeats (empty pings, SSE keepalive comments) came. */
const BEATS_TO_LEARN = 2;
/** A connection is given up after this many beats of silence, and never sooner than the floor. */
const BEATS_OF_SILENCE = 3;
const SILENCE_FLOOR_MS = 5_000;

/**
 * Notices a connection that went silent, which on a cut satellite link can look open for
 * minutes: anything heard restarts the clock; the service's heartbeat (pings, or SSE comments)
 * also teaches it the connection's beat (the longest gap seen), after which three missed beats
 * are enough. Until then it waits `initialMs`.
 */
export function watchSilence(initialMs: number, onSilent: (silentMs: number) => void) {
  let timer: NodeJS.Timeout | undefined;
  let limitMs = initialMs;
  let lastBeat: number | undefined;
  let beats = 0;
  let longestGap = 0;
  const restart = () => {
    clearTimeout(timer);
    timer = setTimeout(() => onSilent(limitMs), limitMs);
  };
  return {
    /** Something arrived; `beat` when it was the service's heartbeat. */
    heard(beat = false) {
      if (beat) {
        const now = Date.now();
        if (lastBeat !== undefined) longestGap = Math.max(longestGap, now - lastBeat);
        lastBeat = now;
        if (++beats >= BEATS_TO_LEARN) limitMs = Math.max(longestGap * BEATS_OF_SILENCE, SILENCE_FLOOR_MS);
      }
      restart();
    },
    stop() {
      clearTimeout(timer);
    },
  };
}
