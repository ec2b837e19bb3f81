import { expect } from 'vitest';
import type { ApiError } from './api.js';

/** What a call of the typed client (`publicApi`) gives: the body of a success or of a refusal, and the response. */
export interface TypedAnswer<T> {
  data?: T;
  error?: ApiError;
  response: Response;
}

/** The body of a typed call's answer, failing the test (with the refusal it got) unless its status is `status`. */
export function dataOf<T>(answer: TypedAnswer<T>, status = 200): T {
  expect(answer.response.status, JSON.stringify(answer.error)).toBe(status);
  return answer.data as T;
}

/**
 * The error of a typed call's refusal, failing the test unless its status is `status` and, when
 * given, its code is `code`.
 */
export function refusalOf(answer: TypedAnswer<unknown>, status: number, code?: string): ApiError['error'] {
  expect(answer.response.status, JSON.stringify(answer.error ?? answer.data)).toBe(status);
  if (!answer.error) throw new Error(`expected the error envelope with ${status}, got no body`);
  if (code !== undefined) expect(answer.error.error.code).toBe(code);
  return answer.error.error;
}
