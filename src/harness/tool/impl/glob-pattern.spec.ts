import { compileGlob, type GlobMatcher } from './glob-pattern';

function matcher(pattern: string): GlobMatcher {
  const compiled = compileGlob(pattern);
  if (!compiled.ok) throw new Error(compiled.error);
  return compiled.value;
}

describe('compileGlob', () => {
  it.each([
    ['*.ts', 'a.ts', true],
    ['*.ts', 'src/a.ts', false],
    ['*.ts', '.hidden.ts', true],
    ['src/*.ts', 'src/a.ts', true],
    ['src/*.ts', 'src/lib/a.ts', false],
    ['**/*.ts', 'a.ts', true],
    ['**/*.ts', 'src/lib/a.ts', true],
    ['**/*.ts', 'src/lib/a.tsx', false],
    ['src/**', 'src/a/b/c.txt', true],
    ['src/**', 'other/a.txt', false],
    ['src/**/test/*.ts', 'src/test/a.ts', true],
    ['src/**/test/*.ts', 'src/x/y/test/a.ts', true],
    ['src/**/test/*.ts', 'src/xtest/a.ts', false],
    ['?.md', 'a.md', true],
    ['?.md', 'ab.md', false],
    ['?', '/', false],
    ['*.{js,json}', 'package.json', true],
    ['*.{js,json}', 'index.js', true],
    ['*.{js,json}', 'index.ts', false],
    ['{src,test}/**/*.ts', 'test/e2e/a.ts', true],
    ['{src,test}/**/*.ts', 'lib/a.ts', false],
    ['a{b,c{d,e}}f', 'acef', true],
    ['[id].tsx', '[id].tsx', true],
    ['[id].tsx', 'i.tsx', false],
    ['a+b(1).txt', 'a+b(1).txt', true],
    ['file\\*.txt', 'file*.txt', true],
    ['file\\*.txt', 'fileX.txt', false],
    ['./*.ts', 'a.ts', true],
    ['a**b', 'aXXb', true],
    ['a**b', 'a/b', false],
  ])('%s against %s → %s', (pattern, candidate, expected) => {
    const compiled = matcher(pattern);
    expect(compiled.test(candidate)).toBe(expected);
    // A walk may start at the literal directory: nothing the pattern matches lies elsewhere.
    if (expected && compiled.literalDirectory !== '') expect(candidate.startsWith(`${compiled.literalDirectory}/`)).toBe(true);
  });

  it.each([
    ['*.ts', ''],
    ['src/lib/*.ts', 'src/lib'],
    ['./src/lib/util.ts', 'src/lib'],
    ['src/**/*.ts', 'src'],
    ['src/**', 'src'],
    ['**/*.ts', ''],
    ['{src,test}/*.ts', ''],
    ['src/{a,b}/*.ts', 'src'],
    ['src/a{1,2}/x', 'src'],
    ['src/file\\*/x', 'src'],
    ['src/?/x', 'src'],
    ['src//lib/x', 'src'],
    ['src/./lib/x', 'src'],
  ])('%s has the literal directory %p', (pattern, directory) => {
    expect(matcher(pattern).literalDirectory).toBe(directory);
  });

  it.each([
    ['', /must not be empty/],
    ['/etc/*', /must be relative/],
    ['../*.ts', /must not contain '\.\.'/],
    ['src/../../x', /must not contain '\.\.'/],
    ['{a,b', /unclosed '\{'/],
    ['abc\\', /lone/],
  ])('refuses %p', (pattern, error) => {
    const compiled = compileGlob(pattern);
    expect(compiled.ok).toBe(false);
    if (!compiled.ok) expect(compiled.error).toMatch(error);
  });
});
