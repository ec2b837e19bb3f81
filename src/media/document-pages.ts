import { PDFDocument } from 'pdf-lib';
import type { RangeReader } from './video-duration.js';

/** Why a PDF whose pages cannot be counted is refused: a network could not show its pages either. */
export const UNREADABLE_DOCUMENT =
  'The PDF cannot be read: its pages could not be counted (a damaged file or one this server cannot decode); ' +
  'save it again as a PDF and upload it anew.';

/**
 * The number of pages of a PDF, counted as its page tree has them (the leaves under the catalog's
 * `/Pages`, not the tree's own `/Count`, which a careless writer may get wrong), or `undefined` when
 * the file cannot be read as a PDF (a broken cross-reference table, a page tree that loops, objects
 * that cannot be decoded).
 *
 * pdf-lib reads the whole file in memory: a PDF's objects may sit anywhere in it, compressed in object
 * streams, and a page tree is found only through them. The operator's `MEDIA_MAX_DOCUMENT_BYTES` (at
 * most 1 GiB) bounds it. An encrypted PDF is read too where its page tree can be: the tree itself is
 * never encrypted, only strings and streams are.
 */
export async function readPageCount(read: RangeReader, size: number): Promise<number | undefined> {
  try {
    const document = await PDFDocument.load(await read(0, size), {
      ignoreEncryption: true,
      updateMetadata: false,
      throwOnInvalidObject: true,
    });
    return document.getPageCount();
  } catch {
    return undefined;
  }
}
