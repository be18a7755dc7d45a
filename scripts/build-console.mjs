// Builds the web console (console/) into dist/console: app.js (Preact, bundled and minified by
// esbuild, with its source map), app.css, index.html and the icon. `npm run build` runs it after
// the server's own build; the server answers these files at `/`.
import { copyFileSync, mkdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const source = join(root, 'console');
const out = join(root, 'dist', 'console');

mkdirSync(out, { recursive: true });
await build({
  entryPoints: { app: join(source, 'src', 'main.tsx') },
  outdir: out,
  bundle: true,
  minify: true,
  sourcemap: 'linked',
  format: 'esm',
  target: ['es2022'],
  jsx: 'automatic',
  jsxImportSource: 'preact',
  legalComments: 'none',
  logLevel: 'warning',
});
await build({
  entryPoints: { app: join(source, 'src', 'styles.css') },
  outdir: out,
  bundle: true,
  minify: true,
  logLevel: 'warning',
});
for (const file of ['index.html', 'favicon.svg']) copyFileSync(join(source, file), join(out, file));
console.log(`web console built in ${out}`);
