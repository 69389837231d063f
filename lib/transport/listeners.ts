/**
 * A socket's listeners recorded as one set, so they are removed together (as undici's client records
 * them with addListener and drops them with removeAllListeners): a connection that hands its socket on
 * (a WebSocket tunnel, tunnel.ts) takes back exactly what it added, and nothing another owner added.
 */
import type { EventEmitter } from 'node:events';

export class ListenerSet {
  /** [event, listener] pairs, in the order they were added. */
  private readonly added: (string | ((...args: never[]) => void))[] = [];

  constructor(private readonly emitter: EventEmitter) {}

  /** emitter.on(event, fn), recorded. */
  on(event: string, fn: (...args: never[]) => void): this {
    this.emitter.on(event, fn as (...args: unknown[]) => void);
    this.added.push(event, fn);
    return this;
  }

  /** Removes every listener this set added. */
  removeAll(): void {
    const a = this.added;
    for (let i = 0; i < a.length; i += 2) this.emitter.removeListener(a[i] as string, a[i + 1] as (...args: unknown[]) => void);
    a.length = 0;
  }
}
