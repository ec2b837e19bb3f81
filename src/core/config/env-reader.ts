import ipaddr from 'ipaddr.js';

/** Environment variables by name: `process.env`, or the variables a test gives. */
export type Env = Record<string, string | undefined>;

/**
 * Reads the typed values of the configuration's sections out of the environment. An invalid value
 * is noted as a problem and replaced by its default, so that start-up reports every problem at once.
 */
export class EnvReader {
  readonly problems: string[] = [];

  constructor(private readonly env: Env) {}

  problem(message: string): void {
    this.problems.push(message);
  }

  /** The variable's value; an empty variable counts as unset. */
  text(name: string): string | undefined {
    return this.env[name] || undefined;
  }

  integer(name: string, fallback: number, min: number, max: number): number {
    const raw = this.text(name);
    if (raw === undefined) return fallback;
    const value = Number(raw);
    if (!Number.isInteger(value) || value < min || value > max) {
      this.problem(`${name} must be an integer between ${min} and ${max}, got "${raw}"`);
      return fallback;
    }
    return value;
  }

  oneOf<T extends string>(name: string, allowed: readonly T[], fallback: T): T {
    const raw = this.text(name);
    if (raw === undefined) return fallback;
    if (!(allowed as readonly string[]).includes(raw)) {
      this.problem(`${name} must be one of ${allowed.join(', ')}, got "${raw}"`);
      return fallback;
    }
    return raw as T;
  }

  boolean(name: string, fallback: boolean): boolean {
    const raw = this.text(name);
    if (raw === undefined) return fallback;
    if (raw === 'true' || raw === '1') return true;
    if (raw === 'false' || raw === '0') return false;
    this.problem(`${name} must be true or false, got "${raw}"`);
    return fallback;
  }

  /**
   * Two variables that go together, such as an app's id and secret: both values, or `undefined` when
   * neither is set; one without the other is a problem. `what` says what the two are.
   */
  pair(first: string, second: string, what: string): [string, string] | undefined {
    const [a, b] = [this.text(first), this.text(second)];
    if (!a && !b) return undefined;
    if (!a || !b) {
      this.problem(`${first} and ${second} go together: set both (${what}) or neither`);
      return undefined;
    }
    return [a, b];
  }

  /** An http(s) origin, scheme and host without a path, given without its trailing slashes. */
  origin(name: string, fallback: string): string {
    const value = (this.text(name) || fallback).replace(/\/+$/, '');
    if (!/^https?:\/\/[^/]+$/.test(value)) this.problem(`${name} must be an http(s) origin, got "${value}"`);
    return value;
  }

  /** A comma-separated list, each entry trimmed, empty entries left out. */
  list(name: string): string[] {
    return (this.text(name) ?? '')
      .split(',')
      .map((entry) => entry.trim())
      .filter(Boolean);
  }

  /** IP addresses and CIDR ranges, comma-separated. */
  addressRanges(name: string): string[] {
    const ranges = this.list(name);
    for (const range of ranges) {
      if (!ipaddr.isValidCIDR(range) && !ipaddr.isValid(range))
        this.problem(`${name} must list IP addresses or CIDR ranges, got "${range}"`);
    }
    return ranges;
  }
}
