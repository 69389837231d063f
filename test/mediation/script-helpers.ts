/**
 * What the script mediation tests share (scripts.test.ts, script-limits.test.ts): a gateway configuration with
 * a small pool and a 300 ms script limit, an API whose [mediation] names a script, and the scripts themselves.
 */
import { BASE_TOML, apiToml, type EchoBackend } from '../gateway/helpers';

export const TOML = `${BASE_TOML}[mediation]\nengine.core_threads = 1\nengine.max_threads = 2\nengine.script_mediator_pool_size = 2\n[throughway.mediation]\nthread_cap = 4\nscript_timeout = "300ms"\nworker_heap_mb = 64\n`;

export function api(be: EchoBackend, script: string, context = '/s'): string {
  return apiToml({
    context,
    endpoint: `http://127.0.0.1:${be.port}`,
    resources: [['/*', ['POST', 'GET']]],
    extra: `[mediation]\nscript = "${script}"`,
  });
}

export const SCRIPTS: Record<string, string> = {
  'scripts/change.js': `
    module.exports.onRequest = function (m) {
      const body = m.body;
      body.total = body.items.reduce((n, i) => n + i.price, 0);
      body.seenApi = m.api.name + ':' + m.api.version;
      return { headers: { 'X-Mediated': 'yes', 'X-Remove-Me': null, 'X-Method': m.method }, body };
    };`,
  'scripts/answer.js': `
    exports.onRequest = (m) => m.headers['x-key'] === 'open' ? undefined : ({ status: 403, body: { denied: m.path } });`,
  'scripts/throws.js': `module.exports.onRequest = () => { throw new Error('no pizza today'); };`,
  'scripts/loops.js': `module.exports.onRequest = () => { for (;;) {} };`,
  'scripts/async-loops.js': `module.exports.onRequest = async () => { for (;;) { await null; } };`,
  'scripts/allocates.js': `module.exports.onRequest = () => { const a = []; for (;;) a.push(new Array(100000).fill(a.length)); };`,
  'scripts/escape.js': `
    module.exports.onRequest = () => ({ body: {
      require: typeof require, process: typeof process, globalThisKeys: Object.keys(globalThis).sort().join(','),
      fn: (() => { try { return Function('return 1')(); } catch (e) { return 'blocked'; } })(),
    } });`,
  'scripts/bad-result.js': `module.exports.onRequest = () => ({ headers: { 'Bad\\nName': 'x' } });`,
  'scripts/text.js': `module.exports.onRequest = (m) => ({ body: String(m.body).toUpperCase() });`,
  'scripts/response.js': `
    module.exports.onResponse = (m) => ({
      status: m.status === 200 ? 203 : m.status,
      headers: { 'X-Backend-Method': m.body.method, 'X-Was': String(m.status) },
      body: { wrapped: m.body.url, path: m.path },
    });`,
  'scripts/response-throws.js': `module.exports.onResponse = () => { throw new Error('bad response'); };`,
};
