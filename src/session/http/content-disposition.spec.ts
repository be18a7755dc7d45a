import { contentDisposition } from './content-disposition';

describe('contentDisposition', () => {
  it('quotes a plain name and repeats it encoded', () => {
    expect(contentDisposition('inline', 'chart.png')).toBe(`inline; filename="chart.png"; filename*=UTF-8''chart.png`);
  });

  it('keeps quotes, backslashes and line breaks of a name out of the header', () => {
    const value = contentDisposition('inline', 'a"; filename="evil.html\r\nx-injected: 1\\.png');
    expect(value).not.toMatch(/[\r\n]/);
    expect(value).toBe(
      `inline; filename="a_; filename=_evil.html__x-injected: 1_.png"; filename*=UTF-8''a%22%3B%20filename%3D%22evil.html%0D%0Ax-injected%3A%201%5C.png`,
    );
  });

  it('gives a non-ASCII name an ASCII stand-in and its UTF-8 encoding', () => {
    expect(contentDisposition('attachment', "résumé (1)'s.pdf")).toBe(
      `attachment; filename="r_sum_ (1)'s.pdf"; filename*=UTF-8''r%C3%A9sum%C3%A9%20%281%29%27s.pdf`,
    );
  });

  it('encodes a lone surrogate as U+FFFD instead of failing', () => {
    expect(contentDisposition('inline', 'a\ud800')).toBe(`inline; filename="a_"; filename*=UTF-8''a%EF%BF%BD`);
  });

  it('cuts a very long name', () => {
    const value = contentDisposition('inline', '😀'.repeat(1000));
    expect(value).toBe(`inline; filename="${'_'.repeat(255)}"; filename*=UTF-8''${'%F0%9F%98%80'.repeat(255)}`);
  });
});
