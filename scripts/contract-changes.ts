import { apiCompare } from 'api-smart-diff';

/**
 * The breaking-change guard: the contracts of `openapi/` compared with the copies of the last
 * release in `openapi/released/` by api-smart-diff, which classifies every change (a removed
 * operation or response field, a newly required parameter, a narrower request value, …). A
 * breaking change passes only when CHANGELOG.md announces it under `## Unreleased`, in a
 * `### Breaking changes` list that names what it breaks in backticks: the operation
 * (`GET /public/v1/posts`), or the webhook event (`webhook post.failed`).
 */

export interface BreakingChange {
  /** What an integrator must look at: `GET /public/v1/posts` or `webhook post.failed`. */
  subject: string;
  /** api-smart-diff's words for it, with the place in the contract. */
  description: string;
}

const METHODS = new Set(['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace']);

/** Every change of `current` from `released` that breaks a client or a webhook receiver written for `released`. */
export function breakingChanges(released: unknown, current: unknown): BreakingChange[] {
  // api-smart-diff normalises the documents it is given in place: it gets copies.
  const { diffs } = apiCompare(asReceived(released), asReceived(current));
  const changes: BreakingChange[] = [];
  for (const diff of diffs) {
    const path = diff.path.map(String);
    const where = path.join('.');
    if (path[0] === 'paths' && diff.type === 'breaking' && path[1]!.startsWith('webhook ')) {
      changes.push({ subject: path[1]!, description: `${diff.description ?? diff.action} (${where})` });
    } else if (path[0] === 'paths' && diff.type === 'breaking') {
      const methods =
        path[2] && METHODS.has(path[2]) ? [path[2]] : methodsOf(diff.action === 'add' ? current : released, path[1]!);
      for (const method of methods)
        changes.push({
          subject: `${method.toUpperCase()} ${path[1]}`,
          description: `${diff.description ?? diff.action} (${where})`,
        });
    }
  }
  return changes;
}

/**
 * A copy of the contract in which each webhook event is also an operation answering its payload:
 * api-smart-diff follows no `$ref` of the `webhooks` section, and a receiver reads a payload as a
 * client reads an answer (a field taken away breaks it, a field added does not).
 */
function asReceived(document: unknown): unknown {
  const copy = structuredClone(document) as {
    paths?: Record<string, unknown>;
    webhooks?: Record<string, { post?: { requestBody?: { content?: unknown } } }>;
  };
  for (const [name, item] of Object.entries(copy.webhooks ?? {})) {
    const content = item.post?.requestBody?.content;
    if (content)
      copy.paths = {
        ...copy.paths,
        [`webhook ${name}`]: { post: { responses: { '200': { description: 'The payload', content } } } },
      };
  }
  delete copy.webhooks;
  return copy;
}

function methodsOf(document: unknown, path: string): string[] {
  const item = (document as { paths?: Record<string, Record<string, unknown>> }).paths?.[path] ?? {};
  return Object.keys(item).filter((key) => METHODS.has(key));
}

/** The subjects the `### Breaking changes` list of the `## Unreleased` section of the changelog names. */
export function announcedSubjects(changelog: string): Set<string> {
  const unreleased = /^## Unreleased[^\n]*\n([\s\S]*?)(?=^## |(?![\s\S]))/m.exec(changelog)?.[1] ?? '';
  const breaking = /^### Breaking changes[^\n]*\n([\s\S]*?)(?=^### |(?![\s\S]))/m.exec(unreleased)?.[1] ?? '';
  // A bullet runs on over the indented lines after it.
  const bullets = breaking.split(/\n(?=\s*[-*] )/).filter((bullet) => /^\s*[-*] /.test(bullet));
  const subjects = new Set<string>();
  for (const bullet of bullets) {
    for (const [, code] of bullet.replace(/\n\s*/g, ' ').matchAll(/`([^`]+)`/g)) subjects.add(code!.trim());
  }
  return subjects;
}

/** The breaking changes the changelog does not announce, one per subject. */
export function unannounced(changes: BreakingChange[], changelog: string): Map<string, string[]> {
  const announced = announcedSubjects(changelog);
  const missing = new Map<string, string[]>();
  for (const change of changes) {
    if (announced.has(change.subject)) continue;
    missing.set(change.subject, [...(missing.get(change.subject) ?? []), change.description]);
  }
  return missing;
}
