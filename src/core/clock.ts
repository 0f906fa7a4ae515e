/** Time as an argument: pure code receives timestamps, edges read them from a Clock. */
export interface Clock {
  nowMs(): number;
}

export const systemClock: Clock = { nowMs: () => Date.now() };
