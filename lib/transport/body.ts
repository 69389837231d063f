/**
 * Gathering a request body for the router (SourceRequest.readBody) instead of relaying it: views of the
 * client's reads are kept, and joined into one buffer of its own when the request is complete. Module
 * functions over the source connection (source.ts) and its client reader (client-reader.ts), which hands
 * them the bytes; parsing goes on as if a target took them.
 */
import { discardBody, gatherBody, markReady, type BodyCollector, type Exchange } from './exchange';
import { expectsContinue } from './headers';
import { keptBytes } from './read-buffers';
import type { BodyRead } from './types';

/** What starting to gather uses of the source connection. */
export interface BodyGatherer {
  readonly ex: Exchange | null;
  readonly writer: { writeInterim(status: number, text: string, headers: readonly string[]): void };
  /** The exchange became ready: continue parsing its body. */
  unblockIfReady(ex: Exchange): void;
}

/** What keeping the gathered bytes uses of the client reader (client-reader.ts). */
export interface ReadKeeper {
  /** A view of the current read buffer is kept: the next read takes another. */
  retainRead: boolean;
}

export const EMPTY_BODY = Buffer.alloc(0);
const NO_FIELDS: readonly string[] = [];

/**
 * readBody(): gather the body instead of relaying it. A body above `limit` resolves as too large at once
 * (a Content-Length says so before any byte).
 */
export function readBody(conn: BodyGatherer, ex: Exchange, limit: number): Promise<BodyRead> {
  if (ex.body.kind === 'gather' || ex.collected !== null || ex.ready || ex.aborted || conn.ex !== ex)
    return Promise.resolve({ ok: false, reason: 'already_read', size: 0 });
  if (!ex.hasBody) {
    ex.collected = EMPTY_BODY;
    return Promise.resolve({ ok: true, body: EMPTY_BODY });
  }
  if (!ex.chunked && ex.contentLength > limit) {
    // Never read: the answer closes the connection (RFC 9110 §15.5.14 allows closing on 413).
    ex.closeAfter = true;
    return Promise.resolve({ ok: false, reason: 'too_large', size: ex.contentLength });
  }
  return new Promise<BodyRead>((resolve) => {
    gatherBody(ex, { limit, chunks: [], size: 0, resolve });
    // The client may wait for 100 Continue before sending the body (RFC 9110 §10.1.1); no backend
    // will send it now, so the gateway does.
    if (ex.versionMinor >= 1 && expectsContinue(ex.headers)) conn.writer.writeInterim(100, 'Continue', NO_FIELDS);
    markReady(ex);
    conn.unblockIfReady(ex);
  });
}

export function collectBody(reads: ReadKeeper, ex: Exchange, c: BodyCollector, chunk: Buffer, start: number, end: number): void {
  c.size += end - start;
  if (c.size > c.limit) {
    ex.closeAfter = true;
    endCollect(ex, c, { ok: false, reason: 'too_large', size: c.size });
    return;
  }
  c.chunks.push(keptBytes(chunk, start, end));
  reads.retainRead = true; // the views keep this read's buffer from being reused
}

/** Gathering ends without a body for the router: the rest of the request is read and dropped. */
export function endCollect(ex: Exchange, c: BodyCollector, r: BodyRead): void {
  discardBody(ex);
  c.chunks.length = 0;
  c.resolve(r);
}

/** The gathered body in one buffer of its own (byteOffset 0): it may be transferred to a worker thread. */
export function finishCollect(ex: Exchange, c: BodyCollector): void {
  const body = Buffer.allocUnsafeSlow(c.size);
  let off = 0;
  for (const piece of c.chunks) off += piece.copy(body, off);
  ex.collected = body;
  c.chunks.length = 0;
  c.resolve({ ok: true, body });
}
