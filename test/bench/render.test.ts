/**
 * The bench's scenario list and docs/performance.md's renderer (bench/render.ts), on a small fake run:
 * no load, nothing measured, so the renderer cannot rot between the lead's measuring runs. The last
 * tests run bench/run.js itself with --from on fake raw files (rendering only, never --write).
 */
import t from 'tap';
import { execFile } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { promisify } from 'node:util';
import {
  COUNTING,
  GATEWAY_OPEN_PATH,
  SCENARIOS,
  sendsGatewayRequest,
  targetPath,
  type Scenario,
  type TargetName,
} from '../../bench/common';
import {
  COUNTING_BEGIN,
  COUNTING_END,
  MEDIATION_BEGIN,
  MEDIATION_END,
  PEERS_BEGIN,
  PEERS_END,
  mainTarget,
  renderDoc,
  renderFeatures,
  cpuVsTransport,
  cpuVsScenario,
  renderMediation,
  renderCounting,
  renderOwn,
  renderWorkers,
  replaceSection,
  vsOpen,
  WORKERS_BEGIN,
  WORKERS_END,
  type Cell,
  type CountingRun,
  type MediationRun,
  type RenderOptions,
  type WorkersRun,
} from '../../bench/render';

const RUN_JS = path.join(__dirname, '..', '..', 'bench', 'run.js');

const byName = (n: string): Scenario => {
  const sc = SCENARIOS.find((s) => s.name === n);
  if (sc === undefined) throw new Error(`no scenario ${n}`);
  return sc;
};

/** A cell with distinctive figures: req/s = base × round, CPU µs/req = us. */
function cell(scenario: string, target: TargetName, round: number, rps: number, us: number, extra: Partial<Cell> = {}): Cell {
  return {
    round,
    scenario,
    target,
    conns: 64,
    ok: true,
    requests: rps * 2,
    durationS: 2,
    rps,
    ratio: NaN,
    p50: 1,
    p99: target === 'direct' ? 4 : 7,
    errors: 0,
    timeouts: 0,
    non2xx: 0,
    proxyUs: target === 'direct' ? null : us,
    backendUs: 20,
    clientUs: 15,
    otherCores: 0.01,
    preBusyCores: 0,
    ...extra,
  };
}

/** Two rounds of every scenario on every target; ratios to direct filled as bench/run.ts does. */
function fakeRun(): Cell[] {
  const cells: Cell[] = [];
  const rpsOf: Record<TargetName, number> = {
    direct: 40000,
    throughway: 20000,
    'throughway-same': 18000,
    'gateway-open': 16000,
    gateway: 14400,
  };
  const usOf: Record<TargetName, number> = { direct: 0, throughway: 30, 'throughway-same': 40, 'gateway-open': 40, gateway: 44 };
  for (const round of [1, 2]) {
    for (const sc of SCENARIOS) {
      let direct = NaN;
      for (const target of sc.targets) {
        // Round 2 is 10 % slower everywhere: ratios within a round stay the same.
        const c = cell(sc.name, target, round, rpsOf[target] * (round === 1 ? 1 : 0.9), usOf[target]);
        if (target === 'direct') direct = c.rps;
        c.ratio = c.rps / direct;
        cells.push(c);
      }
    }
  }
  return cells;
}

const OPTS: RenderOptions = { scenarios: SCENARIOS, rounds: 2, warmup: 2, duration: 10, connections: undefined };

t.test("the scenario list: the issue's six, in run order, auth and throttling on the full gateway, then full and traced", async (t) => {
  t.same(
    SCENARIOS.map((s) => s.name),
    ['small', '64k', 'post1m', 'auth', 'throttling', 'ka1000', 'full', 'traced'],
  );
  for (const n of ['full', 'traced']) {
    const sc = byName(n);
    t.same(
      sc.targets,
      ['direct', 'throughway', 'throughway-same', 'gateway'],
      `${n}: held against the bare transport, with and without the gateway's request`,
    );
    t.equal(targetPath(sc, 'throughway-same'), '/small', `${n}: the same request on the transport goes to the backend's path`);
    t.same(
      sc.targets.filter(sendsGatewayRequest),
      ['throughway-same', 'gateway'],
      `${n}: the token and traceparents go to the gateway and to the transport's same-request cell only`,
    );
    t.equal(targetPath(sc, 'gateway'), '/full/1/small');
    t.equal(sc.auth, true, `${n} sends the token`);
    t.equal(sc.budget, undefined, `${n} is not a feature-vs-open row`);
  }
  t.equal(byName('full').gateway, 'full');
  t.equal(byName('traced').gateway, 'traced');
  t.equal(byName('traced').traceSampled, 0.01, 'tracing sampled at 1 %');
  t.equal(byName('full').traceSampled, undefined);
  t.equal(byName('full').vsTransport?.max, 1.1);
  t.equal(byName('traced').vsTransport?.max, 1.12);
  t.equal(byName('auth').gateway, undefined, 'auth and throttling stay on the gateway without access log or tracing');
  for (const sc of SCENARIOS) {
    t.equal(sc.targets[0], 'direct', `${sc.name}: direct first, the reference of every ratio`);
    t.ok(sc.targets.includes('throughway'), `${sc.name}: a transport-only row`);
  }
  for (const n of ['auth', 'throttling']) {
    const sc = byName(n);
    t.same(sc.targets, ['direct', 'throughway', 'gateway-open', 'gateway'], `${n}: the gateway's open route measured before its own`);
    t.equal(mainTarget(sc), 'gateway');
    t.ok(sc.budget !== undefined && sc.budget.min > 0 && sc.budget.min < 1, `${n} has its issue's budget`);
    t.equal(targetPath(sc, 'direct'), '/small');
    t.equal(targetPath(sc, 'gateway-open'), GATEWAY_OPEN_PATH);
  }
  t.equal(targetPath(byName('auth'), 'gateway'), '/secured/1/small');
  t.equal(byName('auth').auth, true, 'only the auth scenario sends the token');
  t.equal(targetPath(byName('throttling'), 'gateway'), '/limited/1/small');
  t.not(byName('throttling').auth, true);
  t.equal(byName('auth').budget?.min, 0.85, 'docs/security.md: within 15 %');
  t.equal(byName('throttling').budget?.min, 0.9, 'docs/throttling.md: at most 10 %');
  t.equal(mainTarget(byName('small')), 'throughway');
  t.equal(targetPath(byName('post1m'), 'throughway'), '/upload');
});

t.test('the main table: one row per scenario, medians of the cells, the full gateway for auth and throttling', async (t) => {
  const own = renderOwn(fakeRun(), OPTS);
  const lines = own.split('\n');
  const mainRows = lines.slice(2, 2 + SCENARIOS.length);
  t.equal(mainRows.length, 8);
  // direct median (40000 + 36000) / 2 = 38000; transport (20000 + 18000) / 2 = 19000, 0.50 of direct.
  t.equal(mainRows[0], '| GET /small (96 B JSON), 64 conns | 38000 | 19000 | 0.50 | 4 / 7 | 30.0 | 20.0 | 0 / 0 |');
  // The auth row is the gateway's protected route: 14400 and 12960 → 13680, 0.36 of direct, 44 µs/req.
  t.equal(
    mainRows[3],
    '| GET /small (96 B JSON) with a bearer token (oauth2, warm token cache), 64 conns (full gateway) | 38000 | 13680 | 0.36 | 4 / 7 | 44.0 | 20.0 | 0 / 0 |',
  );
  t.match(mainRows[4], /^\| GET \/small \(96 B JSON\) throttled .*\(full gateway\) \| 38000 \| 13680 \| 0\.36 \|/);
  t.equal(mainRows[5], '| GET /small (96 B JSON), 1,000 keep-alive conns | 38000 | 19000 | 0.50 | 4 / 7 | 30.0 | 20.0 | 0 / 0 |');
  t.match(mainRows[6], /^\| GET \/small \(96 B JSON\), oauth2 .* access log, 64 conns \(full gateway\) \| 38000 \| 13680 \| 0\.36 \|/);
  t.match(
    mainRows[7],
    /^\| GET \/small \(96 B JSON\), as full \+ tracing, 1 % of calls sampled .*\(full gateway\) \| 38000 \| 13680 \| 0\.36 \|/,
  );
  t.match(own, 'Values are medians over 2 rounds (min–max in the detail tables) of 2 s warm-up + 10 s measured per cell');
  t.notMatch(own, 'Other work used', 'no warning when other tenants were idle');
  // Detail tables: one per scenario; the feature ones list all four targets with min–max.
  t.equal(lines.filter((l) => l.startsWith('#### ')).length, 8);
  t.ok(
    lines.includes(
      '| gateway, open route | 15200 (14400–16000) | 0.40 (0.40–0.40) | 1 (1–1) | 7 (7–7) | 40.0 (40.0–40.0) | 20.0 (20.0–20.0) | 15.0 (15.0–15.0) | 0.01 (0.01–0.01) | 0 / 0 / 0 |',
    ),
  );
  t.ok(
    lines.includes(
      '| gateway, /secured/1/small | 13680 (12960–14400) | 0.36 (0.36–0.36) | 1 (1–1) | 7 (7–7) | 44.0 (44.0–44.0) | 20.0 (20.0–20.0) | 15.0 (15.0–15.0) | 0.01 (0.01–0.01) | 0 / 0 / 0 |',
    ),
  );
  t.ok(
    lines.includes(
      '| gateway, /limited/1/small | 13680 (12960–14400) | 0.36 (0.36–0.36) | 1 (1–1) | 7 (7–7) | 44.0 (44.0–44.0) | 20.0 (20.0–20.0) | 15.0 (15.0–15.0) | 0.01 (0.01–0.01) | 0 / 0 / 0 |',
    ),
  );
  t.equal(lines.filter((l) => l.startsWith('| throughway (transport only) |')).length, 8);
  t.equal(
    lines.filter(
      (l) =>
        l ===
        '| gateway, /full/1/small | 13680 (12960–14400) | 0.36 (0.36–0.36) | 1 (1–1) | 7 (7–7) | 44.0 (44.0–44.0) | 20.0 (20.0–20.0) | 15.0 (15.0–15.0) | 0.01 (0.01–0.01) | 0 / 0 / 0 |',
    ).length,
    2,
  );
});

t.test('failed cells, errors and a busy machine show in the tables', async (t) => {
  const cells = fakeRun().map((c) => ({ ...c, otherCores: 0.8 }));
  const i = cells.findIndex((c) => c.scenario === 'small' && c.target === 'throughway' && c.round === 2);
  cells[i] = { ...(cells[i] as Cell), ok: false, error: 'no completed requests (errors=3 timeouts=0)' };
  const j = cells.findIndex((c) => c.scenario === 'throttling' && c.target === 'gateway' && c.round === 1);
  cells[j] = { ...(cells[j] as Cell), errors: 2, timeouts: 1, non2xx: 5 };
  const own = renderOwn(cells, OPTS);
  t.match(own, '| throughway (transport only) | 20000 | 0.50 | 1 | 7 | 30.0 | 20.0 | 15.0 | 0.80 | 0 / 0 / 0 (1 cells failed) |');
  t.match(own, / throttled .*\(full gateway\) \| 38000 \| 13680 \| 0\.36 \| 4 \/ 7 \| 44\.0 \| 20\.0 \| 3 \/ 5 \|/);
  t.match(own, 'Other work used a median 0.80 cores');
  const allFailed = fakeRun().map((c) => (c.scenario === '64k' && c.target === 'throughway' ? { ...c, ok: false, error: 'boom' } : c));
  t.match(renderOwn(allFailed, OPTS), '| throughway (transport only) | failed: boom |');
});

t.test(
  "1,000 clients against 64: the transport's CPU per request against the 64-connection scenario, per round, with the target",
  async (t) => {
    t.same(byName('ka1000').vsScenario, { base: 'small', max: 1.2, issue: '1,000 keep-alive clients ≤ 1.2× the 64-client figure' });
    // The transport 30 µs/req at 64 connections; at 1,000: 36 in round 1 (1.2×), 33 in round 2 (1.1×). The backend 20 → 25 and 22.
    const us: Record<number, number> = { 1: 36, 2: 33 };
    const be: Record<number, number> = { 1: 25, 2: 22 };
    const cells = fakeRun().map((c) =>
      c.scenario !== 'ka1000'
        ? c
        : c.target === 'throughway'
          ? { ...c, proxyUs: us[c.round] ?? NaN }
          : { ...c, backendUs: be[c.round] ?? NaN },
    );
    t.same(
      cpuVsScenario(cells, 'ka1000', 'small').map((r) => r.toFixed(3)),
      ['1.200', '1.100'],
      'paired by round',
    );
    t.same(
      cpuVsScenario(cells, 'ka1000', 'small', 'direct').map((r) => r.toFixed(3)),
      ['1.250', '1.100'],
      "direct: the backend's own CPU",
    );
    const own = renderOwn(cells, OPTS);
    t.match(own, 'More connections, the same request');
    t.match(
      own,
      '| GET /small (96 B JSON), 1,000 keep-alive conns | GET /small (96 B JSON), 64 conns | 34.5 | 30.0 | 1.150 (1.200, 1.100) | ≤ 1.20 (1,000 keep-alive clients ≤ 1.2× the 64-client figure) | within | 1.175 (1.250, 1.100) |',
    );
    // Round 2 as slow as round 1 at 1,000 connections, then slower: at the line is within, past it over.
    const at = cells.map((c) => (c.scenario === 'ka1000' && c.target === 'throughway' ? { ...c, proxyUs: 36 } : c));
    t.match(renderOwn(at, OPTS), '| 1.200 (1.200, 1.200) | ≤ 1.20 (1,000 keep-alive clients ≤ 1.2× the 64-client figure) | within |');
    const over = cells.map((c) => (c.scenario === 'ka1000' && c.target === 'throughway' ? { ...c, proxyUs: 37.5 } : c));
    t.match(renderOwn(over, OPTS), '| 1.250 (1.250, 1.250) | ≤ 1.20 (1,000 keep-alive clients ≤ 1.2× the 64-client figure) | **over** |');
    // A round whose base cell failed has no ratio.
    const failed = cells.map((c) => (c.scenario === 'small' && c.target === 'throughway' && c.round === 2 ? { ...c, ok: false } : c));
    t.same(
      cpuVsScenario(failed, 'ka1000', 'small').map((r) => r.toFixed(3)),
      ['1.200'],
    );
    t.notMatch(renderOwn(cells, { ...OPTS, scenarios: [byName('ka1000')] }), 'More connections', 'no row without its base scenario');
    t.notMatch(
      renderOwn(cells, { ...OPTS, connections: 200 }),
      'More connections',
      'no row when --connections gave every scenario the same count',
    );
    // Every 1,000-connection cell of the transport failed: no ratio, no verdict.
    const none = cells.map((c) => (c.scenario === 'ka1000' && c.target === 'throughway' ? { ...c, ok: false } : c));
    t.match(renderOwn(none, OPTS), '| ≤ 1.20 (1,000 keep-alive clients ≤ 1.2× the 64-client figure) | — |');
  },
);

t.test('the features section: the cost against the open route, per round, with the budget', async (t) => {
  const cells = fakeRun();
  t.same(
    vsOpen(cells, 'auth').map((r) => r.toFixed(3)),
    ['0.900', '0.900'],
  );
  const f = renderFeatures(cells, OPTS) ?? '';
  t.match(f, "## The gateway's features: authentication and throttling");
  t.match(
    f,
    '| auth: GET /small (96 B JSON) with a bearer token (oauth2, warm token cache), 64 conns | 19000 · 30.0 | 15200 · 40.0 | 13680 · 44.0 | 0.900 (0.900, 0.900) | +10 % | ≥ 0.85 (docs/security.md: within 15 %) | within |',
  );
  t.match(f, '| ≥ 0.90 (docs/throttling.md: at most 10 %) | within |', '0.900 meets a 0.90 budget');
  // A slower throttled route in round 2 only: the median moves, the verdict follows.
  const slow = cells.map((c) => (c.scenario === 'throttling' && c.target === 'gateway' ? { ...c, rps: c.rps * 0.8 } : c));
  t.match(renderFeatures(slow, OPTS) ?? '', '| 0.720 (0.720, 0.720) | +10 % | ≥ 0.90 (docs/throttling.md: at most 10 %) | **over** |');
  t.equal(renderFeatures(cells, { ...OPTS, scenarios: [byName('small')] }), undefined, 'no section without feature scenarios');
  t.notMatch(
    renderFeatures(cells, { ...OPTS, scenarios: [byName('auth')] }) ?? '',
    'against the bare transport',
    'no full-gateway table without its scenarios',
  );
});

t.test(
  'the full gateway section: CPU per request against the bare transport given the same request, per round, with the target',
  async (t) => {
    const cells = fakeRun();
    // 44 µs/req on the gateway ÷ 40 on the transport given the same request, in both rounds; ÷ 30 on the plain GET.
    t.same(
      cpuVsTransport(cells, 'full').map((r) => r.toFixed(3)),
      ['1.100', '1.100'],
    );
    t.same(
      cpuVsTransport(cells, 'full', 'throughway').map((r) => r.toFixed(3)),
      ['1.467', '1.467'],
    );
    // A gateway cell that measured no proxy CPU gives its round no ratio.
    const noCpu = cells.map((c) => (c.scenario === 'full' && c.target === 'gateway' && c.round === 1 ? { ...c, proxyUs: null } : c));
    t.same(
      cpuVsTransport(noCpu, 'full').map((r) => r.toFixed(3)),
      ['1.100'],
    );
    const f = renderFeatures(cells, { ...OPTS, scenarios: [byName('full'), byName('traced')] }) ?? '';
    t.notMatch(f, "## The gateway's features", 'no feature-vs-open table without its scenarios');
    t.match(f, '## The full gateway against the bare transport');
    t.match(
      f,
      '| full: GET /small (96 B JSON), oauth2 (warm token cache) + three throttle counters + access log, 64 conns | 19000 · 30.0 | 17100 · 40.0 | 13680 · 44.0 | 1.100 (1.100, 1.100) | ≤ 1.10 (full gateway ≤ 1.10× the bare transport) | within | 1.467 (1.467, 1.467) |',
    );
    t.match(f, '| ≤ 1.12 (with tracing sampled at 1 % ≤ 1.12×) | within |');
    // Round 1's gateway at 42 µs/req (1.050) and round 2's at 46 (1.150): the median 1.100 meets 1.10.
    const spread = cells.map((c) => (c.scenario === 'full' && c.target === 'gateway' ? { ...c, proxyUs: c.round === 1 ? 42 : 46 } : c));
    t.match(
      renderFeatures(spread, OPTS) ?? '',
      '| 1.100 (1.050, 1.150) | ≤ 1.10 (full gateway ≤ 1.10× the bare transport) | within | 1.467 (1.400, 1.533) |',
    );
    // 48 µs/req: 1.200 against the same request, over the target.
    const dear = cells.map((c) => (c.scenario === 'full' && c.target === 'gateway' ? { ...c, proxyUs: 48 } : c));
    t.match(
      renderFeatures(dear, OPTS) ?? '',
      '| 1.200 (1.200, 1.200) | ≤ 1.10 (full gateway ≤ 1.10× the bare transport) | **over** | 1.600 (1.600, 1.600) |',
    );
    const failed = cells.map((c) => (c.scenario === 'full' && c.target === 'throughway-same' ? { ...c, ok: false } : c));
    t.same(cpuVsTransport(failed, 'full'), [], "no ratio without the same round's transport cell");
    t.match(renderFeatures(failed, OPTS) ?? '', /\| full: .* \| — \| ≤ 1\.10 .* \| — \| 1\.467 /);
  },
);

t.test('the document: generated sections only, the peers and mediation blocks kept verbatim', async (t) => {
  const cells = fakeRun();
  const peers = `${PEERS_BEGIN}\n## Against the peers\n\n| kept | 1 |\n${PEERS_END}`;
  const mediation = `${MEDIATION_BEGIN}\n## Mediation\n\n| kept | 2 |\n${MEDIATION_END}`;
  const parts = {
    date: '2026-01-02T03:04:05.000Z',
    command: 'npm run bench -- --write',
    machine: ['- CPU: Fake, 2 cores'],
    own: renderOwn(cells, OPTS),
    features: renderFeatures(cells, OPTS),
    peers,
    mediation,
    workDir: '/tmp/throughway-bench',
    demo: { url: 'http://127.0.0.1:8280/pizzashack/1.0.0/small', fromConf: true },
  };
  const doc = renderDoc(parts);
  t.match(doc, '## Machine and run (2026-01-02T03:04:05.000Z)\n\n- CPU: Fake, 2 cores\n- Command: `npm run bench -- --write`');
  t.ok(doc.includes(parts.own) && doc.includes(parts.features ?? '?'), 'both tables as rendered');
  t.ok(doc.includes(peers) && doc.includes(mediation), 'blocks verbatim');
  t.notMatch(doc, 'features:begin', 'no hand-written features block any more');
  t.ok(doc.indexOf('## How to reproduce') > doc.indexOf(MEDIATION_END), 'reproduction last');
  t.match(doc, 'npx autocannon -c 64 -d 10 http://127.0.0.1:8280/pizzashack/1.0.0/small');
  t.match(doc, '--scenarios auth,throttling');
  const bare = renderDoc({ ...parts, peers: undefined, mediation: undefined, features: undefined });
  t.match(bare, 'No peers run recorded yet');
  t.match(bare, 'No mediation run recorded yet');
  t.ok(
    bare.includes(PEERS_BEGIN) && bare.includes(MEDIATION_BEGIN) && bare.includes(MEDIATION_END),
    'markers even when empty, for the next --write',
  );
  // Sections other runs own (the soak run, the import figures) survive a main run's --write verbatim.
  const soak = '<!-- soak:begin -->\n## Reliability (soak)\n\nkept\n<!-- soak:end -->';
  const kept = renderDoc({ ...parts, others: [soak] });
  t.ok(kept.includes(soak), 'the soak section verbatim');
  t.ok(kept.indexOf(soak) < kept.indexOf('## How to reproduce'), 'before the reproduction section');
  t.match(doc, 'node dist/bench/startup.js --runs 5 --write');
  t.match(doc, 'npm run bench -- --instructions --rounds 3');
});

const MEDIATION_RUN: MediationRun = {
  date: '2026-01-02T03:04:05.000Z',
  command: 'npm run bench -- --mediation --write',
  duration: 5,
  warmup: 2,
  rows: [
    { name: 'json1k', label: 'POST 1 KiB JSON, validation on, 64 conns', rps: 11226.4, p50: 5, p99: 12, errors: 0, non2xx: 0 },
    { name: 'small-alone', label: 'GET /small, 32 conns, alone', rps: 14000, p50: 1, p99: 7, errors: 0, non2xx: 0 },
    {
      name: 'small-during-1m',
      label: 'GET /small, 32 conns, while 1 MiB JSON is validated on 8 others',
      rps: 3500,
      p50: 3,
      p99: 82,
      errors: 1,
      non2xx: 0,
    },
  ],
};

t.test('the mediation section and replacing one block of a document', async (t) => {
  const m = renderMediation(MEDIATION_RUN);
  t.ok(m.startsWith(MEDIATION_BEGIN) && m.endsWith(MEDIATION_END));
  t.match(m, '| POST 1 KiB JSON, validation on, 64 conns | 11226 | 5 | 12 | 0 | 0 |');
  t.match(m, 'ran at 0.25 of their rate alone');
  const doc = `# P\n\nA\n\n${MEDIATION_BEGIN}\nold\n${MEDIATION_END}\n\n## How to reproduce\n\nB\n`;
  t.equal(
    replaceSection(doc, MEDIATION_BEGIN, MEDIATION_END, 'NEW', '## How to reproduce'),
    '# P\n\nA\n\nNEW\n\n## How to reproduce\n\nB\n',
  );
  t.equal(
    replaceSection('# P\n\n## How to reproduce\n', MEDIATION_BEGIN, MEDIATION_END, 'NEW', '## How to reproduce'),
    '# P\n\nNEW\n\n## How to reproduce\n',
  );
  t.equal(replaceSection('# P\n', MEDIATION_BEGIN, MEDIATION_END, 'NEW', '## How to reproduce'), '# P\n\nNEW\n');
});

const MACHINE = [
  '- CPU: Fake, 2 cores (shared with other tenants)',
  '- Load average (1/5/15 min) at start 1.00 / 1.00 / 1.00, at end 2.00 / 2.00 / 2.00',
];

/** Two rounds: 1 worker 10000 then 12000 req/s, 2 workers 17000 then 18000 (ratios 1.700 and 1.500). */
const WORKERS_RUN: WorkersRun = {
  date: '2026-01-02T03:04:05.000Z',
  command: 'npm run bench -- --workers --rounds 2 --duration 6 --write',
  machine: MACHINE,
  url: '/pizzashack/1.0.0/small',
  duration: 6,
  warmup: 3,
  connections: 64,
  rounds: 2,
  rows: [
    { round: 1, workers: 1, rps: 10000, p99: 9, errors: 0, non2xx: 0 },
    { round: 1, workers: 2, rps: 17000, p99: 12, errors: 1, non2xx: 0 },
    { round: 2, workers: 1, rps: 12000, p99: 11, errors: 0, non2xx: 2 },
    { round: 2, workers: 2, rps: 18000, p99: 14, errors: 0, non2xx: 0 },
  ],
};

/** Two rounds, the Redis gateway at 0.95 then 0.90 of the memory one, 44 vs 40 µs per request. */
function countingRun(): CountingRun {
  const c = (store: 'memory' | 'redis', round: number, rps: number, us: number): Cell => ({
    ...cell(COUNTING[store].name, 'gateway', round, rps, us),
    p50: store === 'memory' ? 2 : 3,
  });
  return {
    date: '2026-01-02T03:04:05.000Z',
    command: 'npm run bench -- --redis-counting --rounds 2 --duration 6 --write',
    machine: MACHINE,
    redisUrl: 'redis://127.0.0.1:6379',
    duration: 6,
    warmup: 2,
    connections: 64,
    rounds: 2,
    cells: [c('memory', 1, 20000, 40), c('redis', 1, 19000, 44), c('redis', 2, 16200, 44), c('memory', 2, 18000, 40)],
  };
}

t.test('the cluster-mode section: medians per worker count, the 2 ÷ 1 ratio per round, command, date, machine', async (t) => {
  const w = renderWorkers(WORKERS_RUN);
  t.ok(w.startsWith(`${WORKERS_BEGIN}\n## Cluster mode: workers (docs/scale-out.md)`) && w.endsWith(WORKERS_END));
  t.match(w, 'Run of 2026-01-02T03:04:05.000Z, produced by `npm run bench -- --workers --rounds 2 --duration 6 --write`');
  t.match(w, '64 connections, 3 s warm-up + 6 s measured');
  t.match(
    w,
    '| [throughway.cluster] workers | req/s | p99 ms | errors / non-2xx |\n|---|---|---|---|\n| 1 | 11000 (10000–12000) | 10 (9–11) | 0 / 2 |\n| 2 | 17500 (17000–18000) | 13 (12–14) | 1 / 0 |',
  );
  t.match(w, '2 workers ÷ 1, req/s in the same round: 1.600 (1.700, 1.500) (median, then each round).');
  t.ok(
    MACHINE.every((l) => w.includes(`\n${l}\n`)),
    'the machine note',
  );
  const one = renderWorkers({ ...WORKERS_RUN, rounds: 1, rows: WORKERS_RUN.rows.filter((r) => r.round === 1) });
  t.match(one, '| 1 | 10000 | 9 | 0 / 0 |');
  t.match(one, '2 workers ÷ 1, req/s in the same round: 1.700.');
});

t.test('the Redis counting section: memory vs redis per round, gateway CPU per request', async (t) => {
  const r = renderCounting(countingRun());
  t.ok(r.startsWith(`${COUNTING_BEGIN}\n## Throttle counters in Redis (docs/scale-out.md)`) && r.endsWith(COUNTING_END));
  t.match(r, 'produced by `npm run bench -- --redis-counting --rounds 2 --duration 6 --write`');
  t.match(r, 'Redis at redis://127.0.0.1:6379');
  t.match(
    r,
    '| counter_store | req/s | vs memory (per round) | p50 ms | p99 ms | gateway CPU µs/req | CPU vs memory | other cores | errors / timeouts / non-2xx |',
  );
  t.match(r, '| memory | 19000 (18000–20000) | 1 | 2 (2–2) | 7 (7–7) | 40.0 (40.0–40.0) | — | 0.01 (0.01–0.01) | 0 / 0 / 0 |');
  // Round 1: 19000 / 20000 = 0.950; round 2: 16200 / 18000 = 0.900, whatever the order within the round.
  t.match(
    r,
    '| redis | 17600 (16200–19000) | 0.925 (0.950, 0.900) | 3 (3–3) | 7 (7–7) | 44.0 (44.0–44.0) | +10 % | 0.01 (0.01–0.01) | 0 / 0 / 0 |',
  );
  const run = countingRun();
  const failed = {
    ...run,
    cells: run.cells.map((c) => (c.scenario === 'counting-redis' && c.round === 2 ? { ...c, ok: false, error: 'boom' } : c)),
  };
  t.match(renderCounting(failed), '| redis | 19000 | 0.950 | 3 | 7 | 44.0 | +10 % | 0.01 | 0 / 0 / 0 (1 cells failed) |');
  t.equal(targetPath(COUNTING.redis, 'gateway'), targetPath(byName('throttling'), 'gateway'), "the throttling scenario's route");
  t.equal(targetPath(COUNTING.memory, 'gateway'), targetPath(COUNTING.redis, 'gateway'));
  t.notOk(
    SCENARIOS.some((s) => s.name.startsWith('counting-')),
    'not part of the main run',
  );
});

t.test('the document keeps the cluster-mode and Redis counting sections, and has their places when empty', async (t) => {
  const workers = `${WORKERS_BEGIN}\n## Cluster mode\n\n| kept | 3 |\n${WORKERS_END}`;
  const counting = `${COUNTING_BEGIN}\n## Counting\n\n| kept | 4 |\n${COUNTING_END}`;
  const parts = {
    date: '2026-01-02T03:04:05.000Z',
    command: 'npm run bench -- --write',
    machine: MACHINE,
    own: renderOwn(fakeRun(), OPTS),
    features: undefined,
    peers: undefined,
    mediation: undefined,
    workers,
    counting,
    workDir: '/tmp/throughway-bench',
    demo: { url: 'http://127.0.0.1:8280/pizzashack/1.0.0/small', fromConf: true },
  };
  const doc = renderDoc(parts);
  t.ok(doc.includes(workers) && doc.includes(counting), 'blocks verbatim');
  t.ok(
    doc.indexOf(MEDIATION_END) < doc.indexOf(WORKERS_BEGIN) && doc.indexOf(WORKERS_END) < doc.indexOf(COUNTING_BEGIN),
    'after mediation, in this order',
  );
  t.ok(doc.indexOf(COUNTING_END) < doc.indexOf('## How to reproduce'));
  t.match(doc, 'npm run bench -- --workers --rounds 3 --duration 6 --write');
  t.match(doc, 'npm run bench -- --redis-counting --rounds 3 --duration 6 --write');
  const bare = renderDoc({ ...parts, workers: undefined, counting: undefined });
  t.match(
    bare,
    `${WORKERS_BEGIN}\n## Cluster mode: workers (docs/scale-out.md)\n\nNo workers run recorded yet: \`npm run bench -- --workers --write\` adds it.\n${WORKERS_END}`,
  );
  t.match(bare, 'No Redis counting run recorded yet');
  // A section written into a document that has none yet goes before the reproduction steps; again, in place.
  const section = renderWorkers(WORKERS_RUN);
  const once = replaceSection(
    renderDoc({ ...parts, workers: undefined }).replace(/<!-- workers:begin -->[^]*<!-- workers:end -->\n\n/, ''),
    WORKERS_BEGIN,
    WORKERS_END,
    section,
    '## How to reproduce',
  );
  t.ok(once.indexOf(section) > once.indexOf(COUNTING_END) && once.indexOf(section) < once.indexOf('## How to reproduce'));
  t.equal(replaceSection(once, WORKERS_BEGIN, WORKERS_END, section, '## How to reproduce'), once, 'written twice: the same document');
});

t.test('bench/run.js --from renders fake raw runs and measures nothing', async (t) => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tw-bench-render-'));
  t.teardown(() => fs.rmSync(dir, { recursive: true, force: true }));
  const raw = {
    date: '2026-01-02T03:04:05.000Z',
    command: 'npm run bench',
    load0: [0, 0, 0],
    load1: [0, 0, 0],
    opts: { duration: 10, warmup: 2, rounds: 2, connections: null, scenarios: SCENARIOS.map((s) => s.name) },
    clkTck: 100,
    cells: fakeRun(),
    peersFile: undefined,
    peersFromCompare: false,
  };
  const rawFile = path.join(dir, 'run.json');
  fs.writeFileSync(rawFile, JSON.stringify(raw));
  const run = promisify(execFile);
  const r = await run(process.execPath, [RUN_JS, '--from', rawFile], { timeout: 30_000 });
  t.match(r.stdout, '# throughway bench — 2026-01-02T03:04:05.000Z');
  t.match(r.stdout, '| GET /small (96 B JSON), 64 conns | 38000 | 19000 | 0.50 |');
  t.match(r.stdout, '| ≥ 0.85 (docs/security.md: within 15 %) | within |');
  t.match(r.stderr, 'nothing measured');

  // A run recorded before auth and throttling were scenarios (two targets, four scenarios) still renders.
  const old = {
    ...raw,
    opts: { ...raw.opts, scenarios: ['small', 'ka1000'] },
    cells: fakeRun().filter((c) => c.scenario === 'small' || c.scenario === 'ka1000'),
  };
  fs.writeFileSync(rawFile, JSON.stringify(old));
  const o = await run(process.execPath, [RUN_JS, '--from', rawFile], { timeout: 30_000 });
  t.match(o.stdout, '| GET /small (96 B JSON), 1,000 keep-alive conns | 38000 | 19000 | 0.50 |');
  t.notMatch(o.stdout, "The gateway's features");

  const medFile = path.join(dir, 'mediation.json');
  fs.writeFileSync(medFile, JSON.stringify(MEDIATION_RUN));
  const m = await run(process.execPath, [RUN_JS, '--mediation', '--from', medFile], { timeout: 30_000 });
  t.match(m.stdout, '# throughway mediation bench — 2026-01-02T03:04:05.000Z');
  t.match(m.stdout, '| GET /small, 32 conns, while 1 MiB JSON is validated on 8 others | 3500 | 3 | 82 | 1 | 0 |');

  const workersFile = path.join(dir, 'workers.json');
  fs.writeFileSync(workersFile, JSON.stringify(WORKERS_RUN));
  const w = await run(process.execPath, [RUN_JS, '--workers', '--from', workersFile], { timeout: 30_000 });
  t.match(w.stdout, '# workers bench — 2026-01-02T03:04:05.000Z');
  t.match(w.stdout, '| 2 | 17500 (17000–18000) | 13 (12–14) | 1 / 0 |');
  t.match(w.stderr, 'nothing measured');

  const countingFile = path.join(dir, 'counting.json');
  fs.writeFileSync(countingFile, JSON.stringify(countingRun()));
  const c = await run(process.execPath, [RUN_JS, '--redis-counting', '--from', countingFile], { timeout: 30_000 });
  t.match(c.stdout, '# throughway Redis counting bench — 2026-01-02T03:04:05.000Z');
  t.match(c.stdout, '| redis | 17600 (16200–19000) | 0.925 (0.950, 0.900) |');
  t.match(c.stderr, 'nothing measured');

  const bad = await run(process.execPath, [RUN_JS, '--scenarios', 'nope'], { timeout: 30_000 }).then(
    () => ({ code: 0, stderr: '' }),
    (err: { code: number; stderr: string }) => err,
  );
  t.equal(bad.code, 2);
  t.match(bad.stderr, 'unknown scenario nope');
});
