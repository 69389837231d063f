/**
 * The local security audit (lib/audit, docs/security-audit.md) with the installed Spectral and OWASP
 * ruleset: a weak document (no security scheme, an http:// server, no 429 responses, unbounded strings)
 * has the OWASP rules' findings under their stable names and scores below a hardened one; the score is
 * the documented formula; a `$ref` to a URL or a file is never followed; the same document is audited
 * once; a document that is not OpenAPI 3 is AUDIT_DOCUMENT; the packages missing is PACKAGE_MISSING
 * naming the one to install; a ruleset that does not load is AUDIT_FAILED.
 */
import t from 'tap';
import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as http from 'node:http';
import * as os from 'node:os';
import * as path from 'node:path';
import { AuditError, Auditor, MAX_COUNTED_PER_RULE, pointer, scoreOf, WEIGHTS } from '../../lib/audit';
import { HARDENED, WEAK } from './documents';

const dist = path.join(__dirname, '..', '..');

t.test('a weak document: the OWASP rules, under their names, and a lower score than a hardened one', async (t) => {
  const auditor = new Auditor();
  const weak = await auditor.audit(WEAK);
  const rules = new Set(weak.findings.map((f) => f.rule));
  for (const rule of [
    'owasp:api2:2023-read-restricted', // no security scheme on a read operation
    'owasp:api8:2023-no-server-http', // http:// server
    'owasp:api4:2023-rate-limit-responses-429', // no 429 response
    'owasp:api4:2023-string-limit', // strings without maxLength
    'owasp:api4:2023-rate-limit', // no rate-limit headers
    'owasp:api8:2023-define-error-responses-401',
  ])
    t.ok(rules.has(rule), `${rule} found`);
  const http = weak.findings.find((f) => f.rule === 'owasp:api8:2023-no-server-http');
  t.same(http, {
    rule: 'owasp:api8:2023-no-server-http',
    ruleset: 'owasp',
    severity: 'error',
    message: http?.message,
    path: '/servers/0/url',
  });
  const unbounded = weak.findings.filter((f) => f.rule === 'owasp:api4:2023-string-limit').map((f) => f.path);
  t.ok(unbounded.includes('/paths/~1users~1{id}/get/parameters/0/schema'), 'the path parameter, as a JSON Pointer');
  t.equal(weak.score, scoreOf(weak.findings), 'the score is the documented formula');
  t.equal(weak.counts.error + weak.counts.warning + weak.counts.info + weak.counts.hint, weak.findings.length);
  t.match(weak.linter, /@stoplight\/spectral-core@\d+\.\d+\.\d+/);
  t.match(weak.linter, /@stoplight\/spectral-owasp-ruleset@\d+\.\d+\.\d+/);

  const hardened = await auditor.audit(HARDENED);
  t.ok(hardened.score >= weak.score + 40, `hardened ${hardened.score}, weak ${weak.score}`);
  const hardRules = new Set(hardened.findings.map((f) => f.rule));
  for (const rule of [
    'owasp:api2:2023-read-restricted',
    'owasp:api8:2023-no-server-http',
    'owasp:api4:2023-rate-limit-responses-429',
    'owasp:api4:2023-string-limit',
  ])
    t.notOk(hardRules.has(rule), `${rule} not in the hardened document`);
  t.equal(hardened.counts.error, 0, `no error left: ${hardened.findings.map((f) => f.rule).join(', ')}`);
});

t.test('the score: 10000 / (100 + points lost), a rule counted at most three times', async (t) => {
  const score = (lost: number): number => Math.round(10000 / (100 + lost));
  t.equal(scoreOf([]), 100);
  t.equal(scoreOf([{ rule: 'a', severity: 'error' }]), score(WEIGHTS.error));
  t.equal(scoreOf([{ rule: 'a', severity: 'error' }]), 91);
  const many = Array.from({ length: 10 }, () => ({ rule: 'b', severity: 'warning' as const }));
  t.equal(scoreOf(many), score(WEIGHTS.warning * MAX_COUNTED_PER_RULE));
  t.equal(scoreOf([{ rule: 'c', severity: 'hint' }]), 100);
  t.equal(
    scoreOf([...many, { rule: 'b', severity: 'error' }]),
    score(WEIGHTS.error * MAX_COUNTED_PER_RULE),
    'a rule at two severities counts at its worst',
  );
  t.equal(scoreOf(Array.from({ length: 10 }, (_, i) => ({ rule: `e${i}`, severity: 'error' as const }))), 50, '100 points lost: 50');
  t.equal(pointer(['paths', '/a/{b}', 'get', 0, 'x~y']), '/paths/~1a~1{b}/get/0/x~0y');
});

t.test('a $ref to a URL or to a file of the host is not followed', async (t) => {
  let hits = 0;
  const server = http.createServer((_q, r) => {
    hits++;
    r.end('{"type":"string"}');
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  t.teardown(() => server.close());
  const { port } = server.address() as { port: number };
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tw-audit-'));
  t.teardown(() => fs.rmSync(dir, { recursive: true, force: true }));
  const secret = path.join(dir, 'secret.json');
  fs.writeFileSync(secret, '{"type":"string","description":"TOP-SECRET-VALUE"}');
  const doc = {
    ...WEAK,
    paths: {
      '/a': {
        get: {
          responses: {
            '200': { description: 'a', content: { 'application/json': { schema: { $ref: `http://127.0.0.1:${port}/s.json` } } } },
          },
        },
      },
      '/b': { get: { responses: { '200': { description: 'b', content: { 'application/json': { schema: { $ref: secret } } } } } } },
    },
  };
  const r = await new Auditor().audit(doc);
  t.equal(hits, 0, 'no request made');
  const refs = r.findings.filter((f) => f.rule === 'invalid-ref');
  t.equal(refs.length, 2, 'each reference is a finding');
  t.notMatch(JSON.stringify(r), /TOP-SECRET-VALUE/, "the file's content is nowhere in the report");
});

t.test('the same document is audited once; another document again', async (t) => {
  const auditor = new Auditor();
  const [a, b] = await Promise.all([auditor.audit(WEAK), auditor.audit(JSON.parse(JSON.stringify(WEAK)))]);
  t.equal(auditor.runs, 1, 'two audits at once share one run');
  t.equal(a, b);
  await auditor.audit(WEAK);
  t.equal(auditor.runs, 1, 'a cached report');
  const other = await auditor.audit({ ...WEAK, info: { title: 'Other', version: '2' } });
  t.equal(auditor.runs, 2);
  t.not(other.hash, a.hash);
});

t.test('a document that is not OpenAPI 3 is AUDIT_DOCUMENT', async (t) => {
  const auditor = new Auditor();
  for (const doc of [null, [], { swagger: '2.0' }, { openapi: 3 }, { openapi: '2.0.0' }])
    await t.rejects(auditor.audit(doc), { code: 'AUDIT_DOCUMENT', name: 'AuditError' }, JSON.stringify(doc));
  const cyclic: Record<string, unknown> = { openapi: '3.0.0' };
  cyclic.self = cyclic;
  const err = await auditor.audit(cyclic).catch((e: unknown) => e);
  t.ok(err instanceof AuditError);
  t.equal((err as AuditError).code, 'AUDIT_DOCUMENT');
  t.equal(auditor.runs, 0, 'Spectral never ran');
});

/** Runs an audit of WEAK in a child whose module resolution is changed by `hook`; its outcome. */
function auditWith(hook: string): string {
  const audit = path.join(dist, 'lib', 'audit', 'index.js');
  const script = `const M = require('node:module'); const r = M._resolveFilename; M._resolveFilename = function (req, ...a) { ${hook} return r.call(this, req, ...a); };
    const { Auditor } = require(${JSON.stringify(audit)});
    new Auditor().audit(${JSON.stringify(WEAK)}).then((rep) => process.stdout.write('score ' + rep.score), (e) => process.stdout.write(e.name + ' ' + e.code + ' ' + (e.packageName ?? '') + ' ' + e.message));`;
  return execFileSync(process.execPath, ['-e', script], { encoding: 'utf8' });
}

t.test('Spectral or a ruleset not installed: PACKAGE_MISSING naming the package to install', async (t) => {
  for (const name of ['@stoplight/spectral-core', '@stoplight/spectral-owasp-ruleset']) {
    const out = auditWith(
      `if (req === '${name}') { const e = new Error("Cannot find module '" + req + "'"); e.code = 'MODULE_NOT_FOUND'; throw e; }`,
    );
    t.match(out, new RegExp(`^PackageMissingError PACKAGE_MISSING ${name} \\[security_audit\\]`), name);
    t.match(out, new RegExp(`npm install ${name}\\b`));
  }
  t.match(auditWith(''), /^score \d+$/, 'with the packages the same child audits (so the hook is what failed it)');
});

t.test('a ruleset that does not load is AUDIT_FAILED', async (t) => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tw-audit-'));
  t.teardown(() => fs.rmSync(dir, { recursive: true, force: true }));
  const broken = path.join(dir, 'broken-ruleset.js');
  // A ruleset of another shape (a mismatched install): rules must be an object.
  fs.writeFileSync(broken, 'module.exports = { rules: 5 };');
  const out = auditWith(`if (req === '@stoplight/spectral-owasp-ruleset') return ${JSON.stringify(broken)};`);
  t.match(out, /^AuditError AUDIT_FAILED {2}the audit's rulesets do not load: /);
});
