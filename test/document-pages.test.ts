import { describe, expect, it } from 'vitest';
import { readPageCount } from '../src/media/document-pages.js';
import { pdf, pdfDocument } from './support/media-samples.js';

// A PDF's pages, counted from its page tree when it is stored, as LinkedIn's 300 pages need it.
const reader = (file: Buffer) => (start: number, length: number) =>
  Promise.resolve(file.subarray(start, start + length));

/** A PDF written by hand: a catalog, a page tree of `kids` pages whose `/Count` says `count`, and its xref. */
function handWritten(kids: number, count: number, loop = false): Buffer {
  const objects = [
    '<< /Type /Catalog /Pages 2 0 R >>',
    `<< /Type /Pages /Kids [${[...Array(kids).keys()].map((i) => `${i + 3} 0 R`).join(' ')}${loop ? ' 2 0 R' : ''}] /Count ${count} >>`,
    ...Array.from({ length: kids }, () => '<< /Type /Page /Parent 2 0 R /MediaBox [0 0 200 200] >>'),
  ];
  let body = '%PDF-1.7\n';
  const offsets: number[] = [];
  objects.forEach((object, index) => {
    offsets.push(Buffer.byteLength(body, 'latin1'));
    body += `${index + 1} 0 obj\n${object}\nendobj\n`;
  });
  const xref = Buffer.byteLength(body, 'latin1');
  body += `xref\n0 ${objects.length + 1}\n0000000000 65535 f \n`;
  for (const offset of offsets) body += `${String(offset).padStart(10, '0')} 00000 n \n`;
  body += `trailer\n<< /Size ${objects.length + 1} /Root 1 0 R >>\nstartxref\n${xref}\n%%EOF\n`;
  return Buffer.from(body, 'latin1');
}

describe('readPageCount', () => {
  it('counts the pages of a PDF, with its objects in object streams or not', async () => {
    for (const objectStreams of [false, true]) {
      const file = await pdfDocument(12, { objectStreams });
      expect(await readPageCount(reader(file), file.length)).toBe(12);
    }
  });

  it('counts the pages the tree has, not the /Count a writer got wrong', async () => {
    const file = handWritten(3, 500);
    expect(await readPageCount(reader(file), file.length)).toBe(3);
  });

  it('reads no count from a PDF without a page tree, a page tree that loops, or no PDF at all', async () => {
    for (const file of [pdf(), handWritten(2, 2, true), Buffer.from('%PDF-1.4\nnot a document')])
      expect(await readPageCount(reader(file), file.length)).toBeUndefined();
  });
});
