/**
 * A TCP forwarder the test owns between a client (the store, a node) and a database: it relays both ways,
 * can hold what the client sends (so a statement is in flight and unanswered), cut every connection
 * (and reset new ones) and be restored. It listens on a loopback port below 32768 (test/ports.ts says why).
 */
import * as net from 'node:net';

export interface Forwarder {
  readonly port: number;
  /** Bytes the client sent while held (a statement written and not answered). */
  readonly heldBytes: number;
  /** From now on the client's bytes are kept from the database (nothing answers them). */
  hold(): void;
  /** Destroys every relayed connection; until restore(), new connections are reset at once. */
  cut(): void;
  restore(): void;
  close(): Promise<void>;
}

async function listenLow(server: net.Server): Promise<number> {
  for (let attempt = 0; attempt < 50; attempt++) {
    const port = 10_000 + Math.floor(Math.random() * 22_000);
    const ok = await new Promise<boolean>((resolve) => {
      server.once('error', () => resolve(false));
      server.listen(port, '127.0.0.1', () => resolve(true));
    });
    if (ok) return port;
  }
  throw new Error('no free loopback port below 32768 for the forwarder');
}

export async function forwarder(targetPort: number, targetHost = '127.0.0.1'): Promise<Forwarder> {
  const sockets = new Set<net.Socket>();
  let held = false;
  let heldBytes = 0;
  let cut = false;
  const server = net.createServer((client) => {
    client.on('error', () => undefined);
    if (cut) {
      client.resetAndDestroy();
      return;
    }
    const upstream = net.connect(targetPort, targetHost);
    upstream.on('error', () => undefined);
    for (const s of [client, upstream]) {
      sockets.add(s);
      s.on('close', () => sockets.delete(s));
    }
    client.on('data', (d: Buffer) => {
      if (held) heldBytes += d.length;
      else upstream.write(d);
    });
    upstream.on('data', (d: Buffer) => {
      if (!held) client.write(d);
    });
    client.on('close', () => upstream.destroy());
    upstream.on('close', () => client.destroy());
  });
  const port = await listenLow(server);
  return {
    port,
    get heldBytes() {
      return heldBytes;
    },
    hold() {
      held = true;
      heldBytes = 0;
    },
    cut() {
      cut = true;
      held = false;
      for (const s of sockets) s.resetAndDestroy();
    },
    restore() {
      cut = false;
    },
    async close() {
      cut = true;
      for (const s of sockets) s.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
