/**
 * The Node-lines section of docs/performance.md (bench/node-lines.ts): medians per scenario and Node
 * line, ratios of the newer line to this one, between the markers that --write replaces.
 */
import t from 'tap';
import { NODE_LINES_BEGIN, NODE_LINES_END, renderNodeLines, renderNodeLinesTable, type NodeLinesRun } from '../../bench/node-lines';

const row = (round: number, scenario: string, node: string, rps: number, proxyUs: number) => ({
  round,
  scenario,
  node,
  rps,
  p99: 3,
  proxyUs,
  errors: 0,
  non2xx: 0,
});

const RUN: NodeLinesRun = {
  date: '2026-01-02T03:04:05.000Z',
  command: 'node dist/bench/node-lines.js --node /x/node --write',
  machine: ['- CPU: Fake, 2 cores'],
  duration: 6,
  warmup: 2,
  rounds: 2,
  versions: ['v20.20.2', 'v26.10.0'],
  rows: [
    row(1, 'small', 'v20.20.2', 1000, 40),
    row(2, 'small', 'v20.20.2', 1200, 44),
    row(1, 'small', 'v26.10.0', 1500, 30),
    row(2, 'small', 'v26.10.0', 1300, 34),
  ],
};

t.test('medians and ratios per scenario, only scenarios measured on both lines', async (t) => {
  const table = renderNodeLinesTable(RUN);
  const lines = table.split('\n');
  t.equal(lines.length, 3, 'header, rule, one scenario');
  t.match(
    lines[2],
    /^\| GET \/small .* \| 1100 \(1000–1200\) \| 1400 \(1300–1500\) \| 1\.273 \| 42\.0 \(40\.0–44\.0\) \| 32\.0 \(30\.0–34\.0\) \| 0\.762 \|/,
  );
  const doc = renderNodeLines(RUN);
  t.ok(doc.startsWith(NODE_LINES_BEGIN) && doc.endsWith(NODE_LINES_END), 'between its markers');
  t.match(doc, 'produced by `node dist/bench/node-lines.js --node /x/node --write`');
});
