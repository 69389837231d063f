/**
 * The modules a gateway call reads names from on every call export plain data properties: a name
 * re-exported with `export { ... } from` becomes an accessor in TypeScript's CommonJS output, which puts
 * the whole exports object in V8's dictionary mode, and each read of it a generic property load
 * (docs/performance.md, "Counting instructions").
 */
import t from 'tap';
import * as phases from '../../lib/gateway/phases';
import * as security from '../../lib/security';

for (const [name, mod] of [
  ['lib/gateway/phases', phases],
  ['lib/security', security],
] as const) {
  t.test(`${name}: every export is a data property`, async (t) => {
    const accessors = Object.keys(mod).filter((k) => Object.getOwnPropertyDescriptor(mod, k)?.get !== undefined);
    t.same(accessors, [], 'no export read through a getter');
    for (const k of Object.keys(mod)) t.not((mod as Record<string, unknown>)[k], undefined, `${k} is set`);
  });
}

t.test("the values exported from other modules are those modules' own", async (t) => {
  const context = await import('../../lib/gateway/phases/context');
  const route = await import('../../lib/gateway/phases/route');
  const settings = await import('../../lib/security/settings');
  t.equal(phases.CallContext, context.CallContext);
  t.equal(phases.finish, context.finish);
  t.equal(phases.corsFieldsOf, context.corsFieldsOf);
  t.equal(phases.hasDotSegment, route.hasDotSegment);
  t.equal(security.securitySettingsFrom, settings.securitySettingsFrom);
  t.equal(security.ALLOWED_ALGORITHMS, settings.ALLOWED_ALGORITHMS);
});
