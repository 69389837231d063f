/** The in-memory counter store: exact fixed windows, idle eviction, memory bounded under 1 million distinct keys. */
import t from 'tap';
import * as v8 from 'node:v8';
import * as vm from 'node:vm';
import { MemoryCounterStore } from '../../lib/throttle/counters';

// A full collection before each heap reading, so the figure is what the store keeps, not garbage a loaded
// machine has not collected yet (tap runs node without --expose-gc; this is the documented way to get it).
v8.setFlagsFromString('--expose-gc');
const gc = vm.runInNewContext('gc') as () => void;
const heapUsed = (): number => {
  gc();
  return process.memoryUsage().heapUsed;
};

const T0 = 1_800_000_000_000;

t.test('fixed windows aligned to the unit time', async (t) => {
  const s = new MemoryCounterStore(100, 0);
  t.equal(s.add('k', 1, 60_000, T0 + 59_999), 1);
  t.equal(s.add('k', 2, 60_000, T0 + 59_999), 3);
  t.equal(s.peek('k', 60_000, T0 + 59_999), 3);
  t.equal(s.peek('k', 60_000, T0 + 60_000), 0, 'a new window starts at the boundary');
  t.equal(s.add('k', 1, 60_000, T0 + 60_000), 1);
  await s.close();
});

t.test('idle keys are evicted: by the sweep, and first when the store is full', async (t) => {
  const s = new MemoryCounterStore(1000, 0);
  for (let i = 0; i < 600; i++) s.add(`old${i}`, 1, 1000, T0);
  t.equal(s.sweep(T0 + 999), 0, 'nothing expired yet');
  t.equal(s.sweep(T0 + 1000), 600, 'all expired at the window end');
  for (let i = 0; i < 1000; i++) s.add(`a${i}`, 1, 1000, T0);
  for (let i = 0; i < 10; i++) s.add(`b${i}`, 1, 1000, T0 + 5000);
  t.equal(s.size, 10, 'the full store dropped its 1000 expired counters first');
  t.equal(s.evictedLive, 0, 'no live counter was lost');
  await s.close();
});

t.test('1 million distinct keys: the store stays at its bound', async (t) => {
  const max = 50_000;
  const s = new MemoryCounterStore(max, 0);
  const before = heapUsed();
  for (let i = 0; i < 1_000_000; i++) s.add(`u|/api/1|${i}`, 1, 60_000, T0 + 1);
  t.ok(s.size <= max && s.size > max - max / 16 - 1, `never more than ${max} counters (${s.size})`);
  t.equal(s.evictedLive, 1_000_000 - s.size, 'the oldest live counters made room');
  t.equal(s.peek('u|/api/1|999999', 60_000, T0 + 1), 1, 'the newest key counts');
  t.equal(s.peek('u|/api/1|0', 60_000, T0 + 1), 0, 'the oldest was evicted');
  // 50,000 small entries are a few MB; 1 million would be far over 64 MB.
  t.ok(heapUsed() - before < 64 * 1024 * 1024, 'heap growth stays bounded (after a full collection)');
  await s.close();
});
