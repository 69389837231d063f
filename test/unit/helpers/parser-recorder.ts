/**
 * Test helper for lib/transport/parser.ts: records every parser event as plain data so a parse of a
 * message whole and a parse of the same bytes split anywhere can be compared with one deep equality.
 */
import { ExecStatus, HEAD_CONTINUE, HttpParser, ParserEvents } from '../../../lib/transport/parser';

export interface HeadRecord {
  event: 'head';
  method: string;
  url: string;
  statusCode: number;
  statusText: string;
  version: string;
  headers: string[];
  keepAlive: boolean;
  upgrade: boolean;
  contentLength: number;
  chunked: boolean;
  headBytes: number;
}
export interface BodyRecord {
  event: 'body';
  /** Body bytes as latin1; consecutive pieces are joined (where a body splits depends on the reads). */
  text: string;
}
export interface CompleteRecord {
  event: 'complete';
  trailers: string[] | null;
}
export type EventRecord = HeadRecord | BodyRecord | CompleteRecord;

export class Recorder implements ParserEvents {
  events: EventRecord[] = [];
  /** What onHead / onComplete return; a function sees the parser. */
  head: number | ((p: HttpParser) => number) = HEAD_CONTINUE;
  complete: number | ((p: HttpParser) => number) = HEAD_CONTINUE;
  /** Every onBody call as given: the Buffer it pointed into and the range. */
  bodyCalls: { chunk: Buffer; start: number; end: number }[] = [];

  onHead(p: HttpParser): number {
    this.events.push({
      event: 'head',
      method: p.method,
      url: p.url,
      statusCode: p.statusCode,
      statusText: p.statusText,
      version: `${p.versionMajor}.${p.versionMinor}`,
      headers: [...p.headers],
      keepAlive: p.keepAlive,
      upgrade: p.upgrade,
      contentLength: p.contentLength,
      chunked: p.chunked,
      headBytes: p.headBytes,
    });
    return typeof this.head === 'function' ? this.head(p) : this.head;
  }

  onBody(chunk: Buffer, start: number, end: number): void {
    this.bodyCalls.push({ chunk, start, end });
    const text = chunk.toString('latin1', start, end);
    const last = this.events[this.events.length - 1];
    if (last !== undefined && last.event === 'body') last.text += text;
    else this.events.push({ event: 'body', text });
  }

  onComplete(p: HttpParser): number {
    this.events.push({ event: 'complete', trailers: p.trailers === null ? null : [...p.trailers] });
    return typeof this.complete === 'function' ? this.complete(p) : this.complete;
  }
}

export interface ParseResult {
  events: EventRecord[];
  /** 'OK', or '<ExecStatus name> <errorName>' of the first execute that did not return OK. */
  outcome: string;
  recorder: Recorder;
}

export const STATUS_NAME: Record<number, string> = {
  [ExecStatus.OK]: 'OK',
  [ExecStatus.PAUSED]: 'PAUSED',
  [ExecStatus.UPGRADE]: 'UPGRADE',
  [ExecStatus.ERROR]: 'ERROR',
};

/**
 * Parses `input` cut at `cuts` (each piece one execute), then finish() when asked. PAUSED is resumed at
 * once (the offset is checked by the tests that care); any other non-OK status stops the parse.
 */
export function parseCut(
  kind: 'request' | 'response',
  input: Buffer,
  cuts: readonly number[],
  setup: (r: Recorder) => void = () => {},
  maxHeaderSize = 16384,
  finish = false,
): ParseResult {
  const recorder = new Recorder();
  setup(recorder);
  const parser = new HttpParser(kind, recorder, maxHeaderSize);
  let outcome = 'OK';
  try {
    let from = 0;
    pieces: for (const to of [...cuts, input.length]) {
      let off = from;
      for (;;) {
        const st = parser.execute(input, off, to);
        if (st === ExecStatus.OK) break;
        if (st !== ExecStatus.PAUSED) {
          outcome = `${STATUS_NAME[st]} ${parser.errorName}`.trim();
          break pieces;
        }
        off += parser.consumed;
        parser.resume();
      }
      from = to;
    }
    if (finish && outcome === 'OK') {
      const st = parser.finish();
      if (st !== ExecStatus.OK) outcome = `finish ${STATUS_NAME[st]} ${parser.errorName}`.trim();
    }
  } finally {
    parser.destroy();
  }
  return { events: recorder.events, outcome, recorder };
}

/** Every way to cut `length` bytes into two non-empty pieces. */
export function singleCuts(length: number): number[][] {
  const out: number[][] = [];
  for (let i = 1; i < length; i++) out.push([i]);
  return out;
}

/** Every way to cut `length` bytes into three non-empty pieces. */
export function pairCuts(length: number): number[][] {
  const out: number[][] = [];
  for (let i = 1; i < length; i++) for (let j = i + 1; j < length; j++) out.push([i, j]);
  return out;
}

export const latin1 = (s: string): Buffer => Buffer.from(s, 'latin1');
