import { Transform } from 'node:stream';

/**
 * Passes bytes through while counting them, and fails as soon as more than `max` have arrived, so an
 * oversized body is cut off rather than read to its end. With `exact`, a stream that ends short of
 * `max` fails too.
 */
export function sizeGuard(
  max: number,
  onViolation: (received: number, tooLarge: boolean) => Error,
  { exact = false } = {},
) {
  let received = 0;
  return new Transform({
    transform(chunk: Buffer, _encoding, callback) {
      received += chunk.length;
      if (received > max) callback(onViolation(received, true));
      else callback(null, chunk);
    },
    flush(callback) {
      if (exact && received < max) callback(onViolation(received, false));
      else callback();
    },
  });
}
