import type { Clock } from '../../src/clock.ts';

/** A clock tests can move, for lifetimes, lock-outs and windows. Starts at the real time. */
export class TestClock implements Clock {
  #now: number;

  constructor(start: Date = new Date()) {
    this.#now = start.getTime();
  }

  now(): Date {
    return new Date(this.#now);
  }

  advanceSeconds(seconds: number): void {
    this.#now += seconds * 1000;
  }
}
