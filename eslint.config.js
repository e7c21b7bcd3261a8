// Lint rules for lobes: ESLint's and typescript-eslint's recommended sets, with the few
// deviations below, each for a stated reason.
import js from '@eslint/js';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  {
    ignores: ['dist/**', 'node_modules/**', 'models/**/*.onnx', 'bench/out/**', 'bench/tmp/**', '**/*.d.ts'],
  },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    languageOptions: {
      ecmaVersion: 2023,
      sourceType: 'module',
      globals: {
        process: 'readonly',
        Buffer: 'readonly',
        console: 'readonly',
        URL: 'readonly',
        setTimeout: 'readonly',
        clearTimeout: 'readonly',
        setInterval: 'readonly',
        clearInterval: 'readonly',
        performance: 'readonly',
        TextDecoder: 'readonly',
        TextEncoder: 'readonly',
        WebAssembly: 'readonly',
        SharedArrayBuffer: 'readonly',
        Atomics: 'readonly',
        structuredClone: 'readonly',
        queueMicrotask: 'readonly',
      },
    },
    rules: {
      // Untyped boundaries (JSON files, ONNX Runtime and transformers.js objects) are typed `any` on purpose.
      '@typescript-eslint/no-explicit-any': 'off',
      // `_`-prefixed names mark parameters kept for an interface's shape.
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_',
        caughtErrors: 'none' }],
      // Non-null assertions follow bounds checks in the numeric kernels.
      '@typescript-eslint/no-non-null-assertion': 'off',
    },
  },
  {
    // The report page script runs in the browser.
    files: ['src/report/client/**/*.ts'],
    languageOptions: {
      globals: { window: 'readonly', document: 'readonly', Plotly: 'readonly', getComputedStyle: 'readonly',
        requestAnimationFrame: 'readonly' },
    },
  },
);
