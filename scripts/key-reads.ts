/**
 * Which deployment.toml keys the code reads: every property access, element access with a literal name
 * and destructuring in lib/ whose property resolves (through the TypeScript checker, so aliases such as
 * `const p = c.passthru_http; p.http.socket.timeout` count) to a key of the generated configuration
 * interfaces (lib/config/deployment-config.generated.ts). test/config/key-status.test.ts compares the
 * result with the schema's status marks (lib/config/key-status.ts), so a key marked as acting that nothing
 * reads, or a key nothing reads that is not marked, fails the suite.
 *
 * The loader itself (load.ts validates untyped trees), `config print` and the generated file are not
 * readers: validating or printing a key is not acting on it.
 *
 * Run: node dist/scripts/key-reads.js [section-path]   (prints each read key and where it is read)
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import * as ts from 'typescript';

/** Files of lib/ that touch configuration values without acting on them. */
export const NOT_READERS: readonly string[] = ['lib/config/load.ts', 'lib/config/print.ts', 'lib/config/deployment-config.generated.ts'];

const GENERATED = 'lib/config/deployment-config.generated.ts';

function libFiles(dir: string, out: string[] = []): string[] {
  for (const e of fs.readdirSync(dir, { withFileTypes: true })) {
    const p = path.join(dir, e.name);
    if (e.isDirectory()) libFiles(p, out);
    else if (e.name.endsWith('.ts') && !e.name.endsWith('.d.ts')) out.push(p);
  }
  return out;
}

/** `(... ([transport.http.properties], spec 001) ...)` in an interface's comment → its section path. */
function sectionOfInterface(node: ts.InterfaceDeclaration, text: string): string | undefined {
  const ranges = ts.getLeadingCommentRanges(text, node.pos) ?? [];
  for (const r of ranges) {
    const m = /\((top level|\[\[?([^\]]+)\]\]?), (?:spec \d+|the reference's files)\)/.exec(text.slice(r.pos, r.end));
    if (m !== null) return m[1] === 'top level' ? '' : m[2];
  }
  return undefined;
}

/** A property of the generated file → `section|key`, the key relative to the section as the schema writes it. */
function keyOfDeclaration(decl: ts.Declaration): string | undefined {
  if (!ts.isPropertySignature(decl)) return undefined;
  const sf = decl.getSourceFile();
  const names: string[] = [];
  let node: ts.Node = decl;
  while (!ts.isSourceFile(node)) {
    if (ts.isPropertySignature(node)) {
      const n = node.name;
      names.unshift(ts.isIdentifier(n) || ts.isStringLiteral(n) ? n.text : n.getText(sf));
    }
    if (ts.isInterfaceDeclaration(node)) {
      const section = sectionOfInterface(node, sf.text);
      return section === undefined ? undefined : `${section}|${names.join('.')}`;
    }
    node = node.parent;
  }
  return undefined;
}

/** `section|key` → where it is read (`lib/file.ts:line`), for every key of the generated interfaces some code reads. */
export function findKeyReads(root: string): Map<string, string[]> {
  const files = libFiles(path.join(root, 'lib'));
  const program = ts.createProgram(files, {
    target: ts.ScriptTarget.ES2022,
    module: ts.ModuleKind.CommonJS,
    moduleResolution: ts.ModuleResolutionKind.Node10,
    strict: true,
    noUncheckedIndexedAccess: true,
    esModuleInterop: true,
    skipLibCheck: true,
    resolveJsonModule: true,
    types: ['node'],
    noEmit: true,
  });
  const checker = program.getTypeChecker();
  const reads = new Map<string, string[]>();
  const note = (sym: ts.Symbol | undefined, at: ts.Node, rel: string): void => {
    if (sym === undefined) return;
    const decls = sym.declarations ?? [];
    // A property of a union of section types (c.database[name].type) carries every member's declaration.
    for (const d of decls) {
      if (path.relative(root, d.getSourceFile().fileName).split(path.sep).join('/') !== GENERATED) continue;
      const key = keyOfDeclaration(d);
      if (key === undefined) continue;
      const line = at.getSourceFile().getLineAndCharacterOfPosition(at.getStart()).line + 1;
      const list = reads.get(key) ?? [];
      list.push(`${rel}:${line}`);
      reads.set(key, list);
    }
  };
  for (const sf of program.getSourceFiles()) {
    const rel = path.relative(root, sf.fileName).split(path.sep).join('/');
    if (!rel.startsWith('lib/') || NOT_READERS.includes(rel)) continue;
    const visit = (node: ts.Node): void => {
      if (ts.isPropertyAccessExpression(node)) note(checker.getSymbolAtLocation(node.name), node.name, rel);
      else if (ts.isElementAccessExpression(node) && ts.isStringLiteralLike(node.argumentExpression))
        note(checker.getSymbolAtLocation(node.argumentExpression), node, rel);
      else if (ts.isBindingElement(node) && ts.isObjectBindingPattern(node.parent)) {
        const name = node.propertyName ?? node.name;
        if (ts.isIdentifier(name) || ts.isStringLiteral(name))
          note(checker.getTypeAtLocation(node.parent).getProperty(name.text), node, rel);
      }
      ts.forEachChild(node, visit);
    };
    visit(sf);
  }
  return reads;
}

if (require.main === module) {
  const root = path.join(__dirname, '..', '..');
  const only = process.argv[2];
  const reads = findKeyReads(root);
  for (const [k, at] of [...reads.entries()].sort((a, b) => a[0].localeCompare(b[0]))) {
    if (only !== undefined && !k.startsWith(`${only}|`)) continue;
    process.stdout.write(`${k}\t${[...new Set(at)].slice(0, 3).join(' ')}${at.length > 3 ? ' ...' : ''}\n`);
  }
}
