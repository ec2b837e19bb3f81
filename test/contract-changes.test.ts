import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { dump } from 'js-yaml';
import { describe, expect, it } from 'vitest';
import { parseYaml } from '../src/core/contract.js';
import { ROOT } from './support/processes.js';
import { scratchDirs } from './support/scratch.js';

/**
 * The breaking-change guard of `npm test` (scripts/check-contract-changes.ts), run as `npm test` runs
 * it, on copies of the contract changed the way a careless edit would change them.
 */

/** The parts of a contract (an OpenAPI document) that the edits below change. */
interface Contract {
  paths: Record<string, Record<string, Operation>>;
  components: { schemas: Record<string, Schema> };
}
interface Operation {
  operationId: string;
  parameters: { name: string; in: string; required: boolean; schema: object }[];
}
interface Schema {
  properties: Record<string, { type?: string; maxLength?: number; enum?: string[] }>;
  required: string[];
}
interface Contracts {
  publicV1: Contract;
  oauth: Contract;
}

const RELEASED = path.join(ROOT, 'openapi', 'released');
const scratchDir = scratchDirs();

const released = (file: string) => parseYaml(fs.readFileSync(path.join(RELEASED, file), 'utf8')) as Contract;
const schema = (contract: Contract, name: string) => contract.components.schemas[name]!;
const operation = (contract: Contract, template: string, method: string) => contract.paths[template]![method]!;
/** The project's changelog with nothing announced as breaking, whatever the coming release announces. */
const CHANGELOG = fs
  .readFileSync(path.join(ROOT, 'CHANGELOG.md'), 'utf8')
  .replace(/(## Unreleased\n+### Breaking changes\n\n)[\s\S]*?(?=\n### )/, '$1None.\n');

/** Runs the guard on the released contracts changed by `edit`, with `changelog` as CHANGELOG.md. */
function guard(edit: (contracts: Contracts) => void, changelog = CHANGELOG) {
  const dir = scratchDir('contract-changes');
  const contracts = { publicV1: released('public-v1.yaml'), oauth: released('oauth.yaml') };
  edit(contracts);
  fs.writeFileSync(path.join(dir, 'public-v1.yaml'), dump(contracts.publicV1));
  fs.writeFileSync(path.join(dir, 'oauth.yaml'), dump(contracts.oauth));
  fs.writeFileSync(path.join(dir, 'CHANGELOG.md'), changelog);
  const run = spawnSync(
    path.join(ROOT, 'node_modules', '.bin', 'tsx'),
    ['scripts/check-contract-changes.ts', '--current', dir, '--changelog', path.join(dir, 'CHANGELOG.md')],
    {
      cwd: ROOT,
      encoding: 'utf8',
    },
  );
  const named = [...run.stderr.matchAll(/^ {2}`([^`]+)` breaks/gm)].map((match) => match[1]!);
  return { code: run.status, named, output: `${run.stdout}${run.stderr}` };
}

const announcing = (subjects: string[], changelog = CHANGELOG) =>
  changelog.replace(
    '### Breaking changes\n\nNone.\n',
    `### Breaking changes\n\n${subjects.map((s) => `- \`${s}\`: changed on purpose.`).join('\n')}\n`,
  );

const removeReleaseUrl = ({ publicV1 }: Contracts) => {
  const post = schema(publicV1, 'Post');
  delete post.properties.releaseUrl;
  post.required = post.required.filter((name) => name !== 'releaseUrl');
};
const requireFrom = ({ publicV1 }: Contracts) => {
  operation(publicV1, '/public/v1/posts', 'get').parameters.find((p) => p.name === 'from')!.required = true;
};

describe('the breaking-change guard', () => {
  it('passes the contracts as released, and the contracts of this tree against the released copy', () => {
    expect(guard(() => {}).code).toBe(0);
    const current = spawnSync(path.join(ROOT, 'node_modules', '.bin', 'tsx'), ['scripts/check-contract-changes.ts'], {
      cwd: ROOT,
      encoding: 'utf8',
    });
    expect(current.status, current.stderr).toBe(0);
  });

  it('passes additive changes: a new optional response field, a new optional parameter, a new operation', () => {
    const result = guard(({ publicV1, oauth }) => {
      schema(publicV1, 'Post').properties.note = { type: 'string', maxLength: 100 };
      operation(publicV1, '/public/v1/posts', 'get').parameters.push({
        name: 'provider',
        in: 'query',
        required: false,
        schema: { type: 'string', maxLength: 20 },
      });
      publicV1.paths['/public/v1/posts/{id}/copy'] = {
        post: { ...operation(publicV1, '/public/v1/posts/{id}/schedule', 'post'), operationId: 'copyPost' },
      };
      schema(oauth, 'TokenResponse').properties.scope = { type: 'string' };
    });
    expect(result.code, result.output).toBe(0);
  });

  it('fails on a response field removed, naming every operation that answered it', () => {
    const result = guard(removeReleaseUrl);
    expect(result.code).toBe(1);
    expect(result.named).toEqual(
      expect.arrayContaining(['GET /public/v1/posts', 'GET /public/v1/posts/{id}', 'POST /public/v1/posts']),
    );
    expect(result.output).toMatch(/releaseUrl/);
  });

  it('fails on a parameter that became required, and on a value a request may no longer send', () => {
    expect(guard(requireFrom).named).toEqual(['GET /public/v1/posts']);
    const narrower = guard(({ publicV1 }) => {
      schema(publicV1, 'ConnectChannelRequest').properties.provider!.enum = ['youtube'];
    });
    expect(narrower.named).toEqual(['POST /public/v1/channels/connect']);
    const oauth = guard(({ oauth }) => {
      delete oauth.paths['/api/oauth/revoke'];
    });
    expect(oauth.named).toEqual(['POST /api/oauth/revoke']);
  });

  it('fails on a webhook payload that loses a field', () => {
    const result = guard(({ publicV1 }) => {
      const event = schema(publicV1, 'PostWebhookEvent');
      delete event.properties.timestamp;
      event.required = event.required.filter((name) => name !== 'timestamp');
    });
    expect(result.code).toBe(1);
    expect(result.named).toEqual(expect.arrayContaining(['webhook post.failed', 'webhook post.published']));
  });

  it('passes a breaking change once CHANGELOG.md announces every operation it breaks under Unreleased, and not before', () => {
    const both = (contracts: Contracts) => {
      removeReleaseUrl(contracts);
      requireFrom(contracts);
    };
    const subjects = guard(both).named;
    expect(subjects).toContain('GET /public/v1/posts');

    expect(guard(both, announcing(subjects)).code).toBe(0);
    // One bullet may name them all, over several lines.
    const wrapped = CHANGELOG.replace(
      '### Breaking changes\n\nNone.\n',
      `### Breaking changes\n\n- Changed on purpose, concerning\n${subjects.map((s) => `  \`${s}\``).join(',\n')}.\n`,
    );
    expect(guard(both, wrapped).code).toBe(0);
    // One operation left out is still a failure, and names only that one.
    const partly = guard(both, announcing(subjects.filter((s) => s !== 'GET /public/v1/posts/{id}')));
    expect(partly.code).toBe(1);
    expect(partly.named).toEqual(['GET /public/v1/posts/{id}']);
    // An announcement in a released section is history, not this change's.
    const misplaced = CHANGELOG.replace(
      'The first release',
      `${subjects.map((s) => `- \`${s}\``).join('\n')}\n\nThe first release`,
    );
    expect(guard(both, misplaced).code).toBe(1);
  });
});
