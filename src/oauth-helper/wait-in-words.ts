/** A wait as a person reads it: seconds under a minute, whole minutes (rounded up) from there. */
export function waitInWords(seconds: number): string {
  if (seconds < 60) return plural(Math.max(1, Math.ceil(seconds)), 'second');
  return plural(Math.ceil(seconds / 60), 'minute');
}

const plural = (count: number, unit: string) => `${count} ${unit}${count === 1 ? '' : 's'}`;
