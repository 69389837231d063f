/**
 * The last faults a gateway answered, for the runtime view (docs/operations.md, "Runtime view"): a ring of
 * fixed capacity, allocated once, written in O(1) on the fault path only (the exchange observer calls it
 * when an exchange ended with a fault code; a successful call never reaches it). What the view shows
 * beyond the record (the API of the URL) is worked out when the view is read, not when the fault happens.
 */

/** One recorded fault, as the view reads it. */
export interface FaultEntry {
  readonly code: number;
  /** Wall-clock time, ms since the epoch. */
  readonly at: number;
  /** The HTTP status answered (0: the client was gone before any status). */
  readonly status: number;
  readonly method: string;
  readonly url: string;
}

/** The ring's default size: the last 100 faults. */
export const FAULT_RING_SIZE = 100;

export class FaultRing {
  private readonly codes: Int32Array;
  private readonly times: Float64Array;
  private readonly statuses: Uint16Array;
  private readonly methods: string[];
  private readonly urls: string[];
  /** Next slot to write. */
  private next = 0;
  /** Faults recorded since start (the ring holds the last `capacity` of them). */
  total = 0;

  constructor(readonly capacity: number = FAULT_RING_SIZE) {
    this.codes = new Int32Array(capacity);
    this.times = new Float64Array(capacity);
    this.statuses = new Uint16Array(capacity);
    this.methods = new Array<string>(capacity).fill('');
    this.urls = new Array<string>(capacity).fill('');
  }

  /** Records one fault over the oldest slot: no allocation, no search. */
  record(code: number, status: number, method: string, url: string): void {
    const i = this.next;
    this.codes[i] = code;
    this.times[i] = Date.now();
    this.statuses[i] = status;
    this.methods[i] = method;
    this.urls[i] = url;
    this.next = i + 1 === this.capacity ? 0 : i + 1;
    this.total++;
  }

  /** The faults held, newest first. */
  entries(): FaultEntry[] {
    const n = Math.min(this.total, this.capacity);
    const out: FaultEntry[] = [];
    for (let k = 1; k <= n; k++) {
      const i = (this.next - k + this.capacity) % this.capacity;
      out.push({
        code: this.codes[i] as number,
        at: this.times[i] as number,
        status: this.statuses[i] as number,
        method: this.methods[i] as string,
        url: this.urls[i] as string,
      });
    }
    return out;
  }
}
