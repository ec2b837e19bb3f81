import { expect } from 'vitest';

// Vitest types its asymmetric matchers `any`, which the lint's no-unsafe rules refuse inside an expected
// object (`{ id: expect.stringMatching(/^post_/) }`). These are the same matchers, typed as the value they
// stand for, so an expected object keeps the type of what it describes.

/** Any string. */
export const anyString = (): string => expect.any(String) as string;

/** Any number. */
export const anyNumber = (): number => expect.any(Number) as number;

/** A string that matches `pattern`. */
export const stringMatching = (pattern: string | RegExp): string => expect.stringMatching(pattern) as string;

/** A string that contains `text`. */
export const stringContaining = (text: string): string => expect.stringContaining(text) as string;
