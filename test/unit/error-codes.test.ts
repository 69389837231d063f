/**
 * Every error class of lib/ extends ThroughwayError (lib/errors.ts) and every code it can carry is on
 * docs/operations.md (docs/architecture.md, "House rules a machine keeps"). The codes are read by the
 * TypeScript checker from each class's `code` property type, a string literal or a union of them
 * (template literal types expand to their literals), so a code built from another union is found too.
 */
import t from 'tap';
import * as fs from 'node:fs';
import * as path from 'node:path';
import ts from 'typescript';

const root = path.join(__dirname, '..', '..', '..');

interface ErrorClass {
  readonly name: string;
  readonly file: string;
  readonly throughway: boolean;
  /** The literal codes of its `code` property, or why they cannot be read. */
  readonly codes: readonly string[] | string;
}

function libFiles(dir: string): string[] {
  const out: string[] = [];
  for (const e of fs.readdirSync(dir, { withFileTypes: true })) {
    const p = path.join(dir, e.name);
    if (e.isDirectory()) out.push(...libFiles(p));
    else if (e.name.endsWith('.ts')) out.push(p);
  }
  return out;
}

/** The classes of `files` whose base chain reaches the global Error, with their codes. */
export function errorClasses(files: readonly string[], options: ts.CompilerOptions): ErrorClass[] {
  const program = ts.createProgram(files, options);
  const checker = program.getTypeChecker();
  const out: ErrorClass[] = [];
  const chain = (type: ts.Type): string[] => {
    const names: string[] = [];
    let bases = type.isClassOrInterface() ? checker.getBaseTypes(type) : [];
    while (bases.length > 0) {
      const b = bases[0] as ts.Type;
      names.push(b.symbol?.getName() ?? '?');
      bases = b.isClassOrInterface() ? checker.getBaseTypes(b) : [];
    }
    return names;
  };
  for (const sf of program.getSourceFiles()) {
    if (!files.includes(path.resolve(sf.fileName))) continue;
    const visit = (node: ts.Node): void => {
      if (ts.isClassDeclaration(node) && node.name !== undefined && node.heritageClauses !== undefined) {
        const type = checker.getTypeAtLocation(node);
        const bases = chain(type);
        if (bases.includes('Error') && node.name.text !== 'ThroughwayError') {
          const isAbstract = node.modifiers?.some((m) => m.kind === ts.SyntaxKind.AbstractKeyword) === true;
          const prop = type.getProperty('code');
          let codes: readonly string[] | string = 'no code property';
          if (prop !== undefined) {
            const ct = checker.getTypeOfSymbolAtLocation(prop, node);
            const parts = ct.isUnion() ? ct.types : [ct];
            codes = parts.every((p) => p.isStringLiteral())
              ? parts.map((p) => (p as ts.StringLiteralType).value).sort()
              : `code is ${checker.typeToString(ct)}, not string literals`;
          }
          if (!isAbstract)
            out.push({
              name: node.name.text,
              file: path.relative(root, sf.fileName),
              throughway: bases.includes('ThroughwayError'),
              codes,
            });
        }
      }
      ts.forEachChild(node, visit);
    };
    visit(sf);
  }
  return out.sort((a, b) => a.name.localeCompare(b.name));
}

const options: ts.CompilerOptions = {
  target: ts.ScriptTarget.ES2022,
  module: ts.ModuleKind.CommonJS,
  strict: true,
  skipLibCheck: true,
  types: ['node'],
  noEmit: true,
};

t.test('the reader finds a class that skips the base, and one with a wide code (so this file can fail)', async (t) => {
  const dir = fs.mkdtempSync(path.join(root, 'dist', 'error-codes-'));
  t.teardown(() => fs.rmSync(dir, { recursive: true, force: true }));
  const file = path.join(dir, 'planted.ts');
  fs.writeFileSync(
    file,
    [
      `import { ThroughwayError } from '${path.join(root, 'lib', 'errors').split(path.sep).join('/')}';`,
      'export class Bare extends Error { readonly code = "BARE"; }',
      'export class Wide extends ThroughwayError { readonly code: string = "X"; }',
      'type K = "a" | "b";',
      'export class Built extends ThroughwayError { readonly code: `BUILT_${Uppercase<K>}` = "BUILT_A"; }',
      'class Middle extends ThroughwayError { readonly code = "MIDDLE"; }',
      'export class Deep extends Middle {}',
    ].join('\n'),
  );
  const found = errorClasses([file], options);
  t.same(
    found.map((c) => [c.name, c.throughway, c.codes]),
    [
      ['Bare', false, ['BARE']],
      ['Built', true, ['BUILT_A', 'BUILT_B']],
      ['Deep', true, ['MIDDLE']],
      ['Middle', true, ['MIDDLE']],
      ['Wide', true, 'code is string, not string literals'],
    ],
  );
});

t.test('every error class of lib/ extends ThroughwayError, with literal codes, each on docs/operations.md', async (t) => {
  const classes = errorClasses(
    libFiles(path.join(root, 'lib')).map((f) => path.resolve(f)),
    options,
  );
  t.ok(classes.length >= 30, `${classes.length} error classes`);
  const page = fs.readFileSync(path.join(root, 'docs', 'operations.md'), 'utf8');
  for (const c of classes) {
    t.ok(c.throughway, `${c.name} (${c.file}) extends ThroughwayError`);
    if (typeof c.codes === 'string') {
      t.fail(`${c.name} (${c.file}): ${c.codes}`);
      continue;
    }
    const missing = c.codes.filter((code) => !page.includes(`\`${code}\``));
    t.same(missing, [], `${c.name} (${c.file}): codes on docs/operations.md`);
    t.ok(page.includes(`\`${c.name}\``), `${c.name} named on docs/operations.md`);
  }
});
