/**
 * The house rules a machine keeps (docs/architecture.md, "House rules a machine keeps"), as ESLint rules of the local
 * plugin `throughway`, loaded by eslint.config.mjs from the compiled dist/scripts/lint/rules.js.
 * - `throughway/floors`: an import of lib/ that breaks the floors (scripts/lint/floors.ts); the circles
 *   between rooms need the whole graph and stay in test/unit/floors.test.ts.
 */
import * as path from 'node:path';
import type { Rule } from 'eslint';
import { edgeBreaks, edgeOf } from './floors';

type Node = Rule.Node;

const floors: Rule.RuleModule = {
  meta: {
    type: 'problem',
    docs: { description: 'imports of lib/ go down the floors of docs/architecture.md' },
    schema: [],
    messages: { broken: '{{specifier}}: {{rule}}' },
  },
  create(context) {
    const libDir = path.join(context.cwd, 'lib');
    const rel = path.relative(libDir, context.filename).split(path.sep).join('/');
    if (rel.startsWith('..') || path.isAbsolute(rel)) return {};
    const check = (node: Node, source: unknown): void => {
      if (typeof source !== 'string') return;
      const edge = edgeOf(rel, source);
      if (edge === undefined) return;
      for (const rule of edgeBreaks(edge)) context.report({ node, messageId: 'broken', data: { specifier: source, rule } });
    };
    return {
      ImportDeclaration: (n) => check(n, n.source.value),
      ExportNamedDeclaration: (n) => check(n, n.source?.value),
      ExportAllDeclaration: (n) => check(n, n.source.value),
      ImportExpression: (n) => check(n, n.source.type === 'Literal' ? n.source.value : undefined),
      CallExpression: (n) => {
        const arg = n.arguments[0];
        if (n.callee.type === 'Identifier' && n.callee.name === 'require' && arg?.type === 'Literal') check(n, arg.value);
      },
      // `import x = require('...')` (TypeScript's form).
      TSExternalModuleReference(n: Node & { expression?: { value?: unknown } }) {
        check(n, n.expression?.value);
      },
    } as Rule.RuleListener;
  },
};

export const rules: Readonly<Record<string, Rule.RuleModule>> = { floors };
