// ESLint's configuration: the house rules (docs/architecture.md, "House rules a machine keeps"). The local rules are
// TypeScript in scripts/lint/rules.ts, compiled by `npm run build` (npm test's pretest builds first).
import parser from '@typescript-eslint/parser';
import lint from './dist/scripts/lint/rules.js';

const throughway = { rules: lint.rules };

export default [
  { ignores: ['dist/**', 'node_modules/**', 'docs/**', 'conf/**'] },
  {
    files: ['lib/**/*.ts', 'scripts/**/*.ts', 'bench/**/*.ts', 'test/**/*.ts'],
    languageOptions: { parser, ecmaVersion: 2022, sourceType: 'module' },
    linterOptions: { reportUnusedDisableDirectives: 'error' },
    plugins: { throughway },
    rules: {
      'no-debugger': 'error',
      'no-var': 'error',
      eqeqeq: ['error', 'always', { null: 'ignore' }],
    },
  },
  {
    files: ['lib/**/*.ts'],
    rules: {
      'throughway/floors': 'error',
      'no-restricted-syntax': [
        'error',
        {
          selector: "ThrowStatement > NewExpression[callee.name='Error']",
          message: 'throw a ThroughwayError subclass with a code documented in docs/operations.md (lib/errors.ts), not a bare Error',
        },
        {
          selector: "ClassDeclaration[superClass.name='Error']",
          message: 'errors extend ThroughwayError (lib/errors.ts) and carry a documented code',
        },
      ],
    },
  },
  {
    files: ['lib/**/*.ts'],
    ignores: ['lib/config/**'],
    rules: {
      'no-restricted-properties': [
        'error',
        {
          object: 'process',
          property: 'env',
          message: 'the environment is read only in lib/config (lib/config/switches.ts environment())',
        },
      ],
    },
  },
  {
    files: ['lib/errors.ts'],
    rules: { 'no-restricted-syntax': 'off' },
  },
];
