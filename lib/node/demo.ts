/**
 * The demo backend ([throughway.demo] enable; lib/demo/backend.ts) on its port (docs/quickstart.md).
 */
import { createDemoBackend } from '../demo/backend';
import type { Boot } from './boot';

export async function startDemo(b: Boot): Promise<void> {
  // In cluster mode the primary runs the demo backend once; workers sharing its port would collide.
  if (!b.config.throughway.demo.enable || b.cl?.role === 'worker') return;
  b.demo = createDemoBackend({ port: b.ports.demo });
  const a = await b.demo.listen();
  b.log(`  ${'demo backend'.padEnd(18)} port ${a.port} (127.0.0.1)`);
}
