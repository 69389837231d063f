/**
 * Memory while a large body streams: a sampler, driven by the bytes that went through, that forces a
 * full GC before each reading, so what it sees is memory still referenced (a proxy that buffered a body
 * would hold it; garbage does not count). Progress-driven, not timer-driven: the number of samples does
 * not depend on how loaded the machine is.
 */
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';

setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;

export interface MemoryPeak {
  /** Largest growth over the baseline, bytes. */
  readonly arrayBuffers: number;
  readonly rss: number;
  readonly samples: number;
}

export class MemorySampler {
  private readonly baseArrayBuffers: number;
  private readonly baseRss: number;
  private maxArrayBuffers = 0;
  private maxRss = 0;
  private samples = 0;
  private sinceLast = 0;

  /** Takes the baseline now; then one sample per `every` bytes passed to progress(). */
  constructor(private readonly every = 8 * 1024 * 1024) {
    gc();
    gc();
    const m = process.memoryUsage();
    this.baseArrayBuffers = m.arrayBuffers;
    this.baseRss = m.rss;
  }

  /** `bytes` more went through. */
  progress(bytes: number): void {
    this.sinceLast += bytes;
    if (this.sinceLast >= this.every) {
      this.sinceLast = 0;
      this.sample();
    }
  }

  private sample(): void {
    // Twice: V8 frees dead ArrayBuffers' memory on a background sweeper after a GC, and the next GC
    // waits for that sweep to finish; one gc() alone reports buffers that are already garbage.
    gc();
    gc();
    const m = process.memoryUsage();
    this.samples++;
    this.maxArrayBuffers = Math.max(this.maxArrayBuffers, m.arrayBuffers - this.baseArrayBuffers);
    this.maxRss = Math.max(this.maxRss, m.rss - this.baseRss);
  }

  stop(): MemoryPeak {
    this.sample();
    return { arrayBuffers: this.maxArrayBuffers, rss: this.maxRss, samples: this.samples };
  }
}
