/**
 * A hand-written HTTP/2 client for the defence tests: frames (RFC 9113 §4.1) and HPACK literals
 * (RFC 7541 §5.1, §6) written byte by byte on a TLS connection that chose h2 by ALPN, frames read back.
 */
import * as tls from 'node:tls';

export const FRAME = { DATA: 0, HEADERS: 1, RST_STREAM: 3, SETTINGS: 4, PING: 6, GOAWAY: 7, WINDOW_UPDATE: 8, CONTINUATION: 9 } as const;
export const FLAG = { END_STREAM: 0x1, ACK: 0x1, END_HEADERS: 0x4 } as const;
export const PREFACE = Buffer.from('PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n', 'latin1');

export function frame(type: number, flags: number, stream: number, payload: Buffer = Buffer.alloc(0)): Buffer {
  const h = Buffer.alloc(9);
  h.writeUIntBE(payload.length, 0, 3);
  h[3] = type;
  h[4] = flags;
  h.writeUInt32BE(stream & 0x7fffffff, 5);
  return Buffer.concat([h, payload]);
}

/** An HPACK integer with an N-bit prefix (RFC 7541 §5.1); `first` holds the bits above the prefix. */
export function hpackInt(v: number, prefix: number, first = 0): Buffer {
  const max = (1 << prefix) - 1;
  if (v < max) return Buffer.from([first | v]);
  const out = [first | max];
  v -= max;
  while (v >= 128) {
    out.push((v % 128) + 128);
    v = Math.floor(v / 128);
  }
  out.push(v);
  return Buffer.from(out);
}

/** An HPACK string literal, not Huffman-coded (RFC 7541 §5.2): one octet per character (latin1), its length in octets. */
const str = (s: string): Buffer => {
  const b = Buffer.from(s, 'latin1');
  return Buffer.concat([hpackInt(b.length, 7), b]);
};
/** A literal field without indexing, new name (RFC 7541 §6.2.2). */
export const literal = (name: string, value: string): Buffer => Buffer.concat([Buffer.from([0x00]), str(name), str(value)]);
/** A literal field with incremental indexing, new name (§6.2.1): it enters the dynamic table (index 62 first). */
export const indexedLiteral = (name: string, value: string): Buffer => Buffer.concat([Buffer.from([0x40]), str(name), str(value)]);
/** An indexed field (§6.1). */
export const indexed = (i: number): Buffer => hpackInt(i, 7, 0x80);

/** A GET's pseudo-fields: :method GET and :scheme https from the static table, :path and :authority as literals. */
export function getBlock(path: string): Buffer {
  return Buffer.concat([indexed(2), indexed(7), literal(':path', path), literal(':authority', 'localhost')]);
}

export interface Got {
  readonly type: number;
  readonly flags: number;
  readonly stream: number;
  readonly payload: Buffer;
}

export interface RawH2 {
  readonly frames: Got[];
  send(b: Buffer): void;
  /** Resolves when the connection closed (or after ms). */
  closed(ms?: number): Promise<boolean>;
  until(cond: (frames: readonly Got[]) => boolean, ms?: number): Promise<boolean>;
  goaway(): { code: number } | undefined;
  destroy(): void;
}

/** Connects with ALPN h2, sends the preface, an empty SETTINGS (or `settings`), and ACKs the server's SETTINGS. */
export function rawH2(port: number, ca: string, settings: Buffer = Buffer.alloc(0)): Promise<RawH2> {
  return new Promise((resolve, reject) => {
    const frames: Got[] = [];
    let buf = Buffer.alloc(0);
    let isClosed = false;
    const socket = tls.connect({ host: '127.0.0.1', port, servername: 'localhost', ca, ALPNProtocols: ['h2'] }, () => {
      if (socket.alpnProtocol !== 'h2') return reject(new Error(`ALPN chose ${String(socket.alpnProtocol)}`));
      socket.write(Buffer.concat([PREFACE, frame(FRAME.SETTINGS, 0, 0, settings)]));
      resolve(api);
    });
    socket.on('error', () => undefined);
    socket.on('close', () => (isClosed = true));
    socket.on('data', (d: Buffer) => {
      buf = Buffer.concat([buf, d]);
      while (buf.length >= 9) {
        const len = buf.readUIntBE(0, 3);
        if (buf.length < 9 + len) break;
        const f = {
          type: buf[3] as number,
          flags: buf[4] as number,
          stream: buf.readUInt32BE(5) & 0x7fffffff,
          payload: buf.subarray(9, 9 + len),
        };
        buf = buf.subarray(9 + len);
        frames.push(f);
        if (f.type === FRAME.SETTINGS && (f.flags & FLAG.ACK) === 0 && !socket.destroyed) socket.write(frame(FRAME.SETTINGS, FLAG.ACK, 0));
      }
    });
    const wait = async (cond: () => boolean, ms: number): Promise<boolean> => {
      const end = Date.now() + ms;
      while (!cond() && Date.now() < end) await new Promise((r) => setTimeout(r, 10));
      return cond();
    };
    const api: RawH2 = {
      frames,
      send: (b) => {
        if (!socket.destroyed) socket.write(b);
      },
      closed: (ms = 3000) => wait(() => isClosed, ms),
      until: (cond, ms = 3000) => wait(() => cond(frames), ms),
      goaway() {
        const g = frames.find((f) => f.type === FRAME.GOAWAY);
        return g === undefined ? undefined : { code: g.payload.readUInt32BE(4) };
      },
      destroy: () => socket.destroy(),
    };
  });
}
