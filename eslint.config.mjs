// ESLint: typescript-eslint's type-checked rules on the TypeScript of src/, test/ and scripts/;
// Prettier owns the layout (eslint-config-prettier turns the layout rules off), except the 120-column
// limit, which holds for comments and strings too. Tests may keep long literals (a URL, a body).
import js from '@eslint/js';
import stylistic from '@stylistic/eslint-plugin';
import prettier from 'eslint-config-prettier';
import globals from 'globals';
import tseslint from 'typescript-eslint';

const maxLen = (options = {}) => [
  'error',
  { code: 120, tabWidth: 2, ignoreUrls: true, ignoreRegExpLiterals: true, ...options },
];

export default tseslint.config(
  {
    ignores: [
      'node_modules/',
      'generated/',
      'dist/',
      'data/',
      'coverage/',
      'test-artifacts/',
      '.cache/',
      'src/sdk/build/',
      'src/sdk/dist/',
    ],
  },
  js.configs.recommended,
  ...tseslint.configs.recommendedTypeChecked,
  prettier,
  {
    languageOptions: {
      parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname },
      globals: { ...globals.node },
    },
    plugins: { '@stylistic': stylistic },
    rules: {
      '@stylistic/max-len': maxLen(),
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
    },
  },
  {
    files: ['test/**/*.ts'],
    rules: { '@stylistic/max-len': maxLen({ ignoreStrings: true, ignoreTemplateLiterals: true }) },
  },
  {
    files: ['**/*.mjs', '**/*.js', '**/*.cjs'],
    ...tseslint.configs.disableTypeChecked,
  },
  {
    // The pages' scripts run in the browser.
    files: ['src/pages/assets/**/*.js'],
    languageOptions: { globals: { ...globals.browser } },
  },
);
