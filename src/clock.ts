/** The one source of "now". Tests inject a clock they can move, for lifetimes and locks. */
export interface Clock {
  now(): Date;
}

export const systemClock: Clock = { now: () => new Date() };

export const isoNow = (clock: Clock): string => clock.now().toISOString();
export const isoAfter = (clock: Clock, seconds: number): string =>
  new Date(clock.now().getTime() + seconds * 1000).toISOString();
